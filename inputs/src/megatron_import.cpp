// Megatron-LM command lines read back into a plan file: the arguments `export --format megatron`
// writes (megatron/training/arguments.py's names), and launch scripts as users have them.
#include "parallax/inputs/megatron_import.hpp"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>

#include "megatron_moe_flags.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/megatron_conventions.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {

std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream ss(text);
  std::string tok;
  while (ss >> tok) {
    if (tok != "\\") out.push_back(tok);
  }
  return out;
}

namespace {

PlanFile parse_args(const std::vector<std::string>& args, const PlanFile& base,
                    std::vector<std::string>* ignored);

}  // namespace

PlanFile parse_megatron_args(const std::vector<std::string>& args, const PlanFile& base) {
  return parse_args(args, base, nullptr);
}

MegatronImport import_megatron_command(const std::string& text, const PlanFile& base) {
  // A launch script as Megatron-LM's examples write them (examples/gpt3/
  // train_gpt3_175b_distributed.sh: bash arrays of flags, comments, torchrun ... pretrain_gpt.py
  // "${ARGS[@]}"), or the arguments alone: every --flag of the text is read, shell comments and
  // quotes dropped, words that are neither flags nor their values skipped.
  std::string clean;
  bool comment = false;
  char prev = '\n';
  for (char c : text) {
    if (c == '\n') comment = false;
    else if (c == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) comment = true;
    prev = c;
    if (comment) continue;
    clean += (c == '"' || c == '\'' || c == '(' || c == ')') ? ' ' : c;
  }
  return import_megatron_args(split_args(clean), base);
}

namespace {

// The Megatron-LM flag that sets a field of the model spec (its JSON path), to name it in a
// refusal; the path itself for a field no single flag sets.
std::string flag_of_model_path(const std::string& path) {
  static constexpr std::pair<const char*, const char*> kFlags[] = {
      {"$.rope_base", "--rotary-base"},
      {"$.rope_scaling.factor", "--rope-scaling-factor"},
      {"$.moe.num_experts", "--num-experts"},
      {"$.moe.top_k", "--moe-router-topk"},
      {"$.moe.expert_ffn_hidden", "--moe-ffn-hidden-size"},
      {"$.moe.shared_experts", "--moe-shared-expert-intermediate-size"},
      {"$.moe.shared_expert_ffn_hidden", "--moe-shared-expert-intermediate-size"},
      {"$.moe.layer_freq", "--moe-layer-freq"},
      {"$.moe.first_k_dense", "--moe-layer-freq"},
      {"$.moe.aux_loss_coeff", "--moe-aux-loss-coeff"},
      {"$.moe.capacity_factor", "--moe-expert-capacity-factor"},
  };
  for (const megatron::ModelFlag& f : megatron::kModelFlags)
    if (path == f.json_path) return f.flag;
  for (const auto& [json_path, flag] : kFlags)
    if (path == json_path) return flag;
  return path;
}

// The imported model under every rule of the model reader (read_model: heads divide hidden, kv
// heads divide heads, top-k within the experts, ...), as a model file of the same shape would be;
// Megatron-LM asserts the same in arguments.py and TransformerConfig. The refusal names the flag.
void check_imported_model(const ModelSpec& m) {
  const nlohmann::json j = to_json(m);
  try {
    JsonObjectReader r(j, "megatron args");
    (void)read_model(r);
  } catch (const InputError& e) {
    throw InputError("megatron args", flag_of_model_path(e.path()), e.rule());
  }
}

}  // namespace

MegatronImport import_megatron_args(const std::vector<std::string>& tokens, const PlanFile& base) {
  // The model comes from the arguments alone: nothing of the base's shape may leak in.
  PlanFile blank = base;
  blank.model = ModelSpec{};
  blank.model.name = "megatron-args";
  blank.model.source = "Megatron-LM command line";
  blank.job.global_batch = 0;
  MegatronImport out;
  bool vocab_file = false;
  for (const std::string& t : tokens) vocab_file = vocab_file || t == "--vocab-file";
  out.file = parse_args(tokens, blank, &out.ignored);
  for (const char* flag : kNotCosted) {
    const auto it = std::find(out.ignored.begin(), out.ignored.end(), flag);
    if (it == out.ignored.end()) continue;
    out.ignored.erase(it);
    out.not_costed.push_back(flag);
  }
  ModelSpec& m = out.file.model;
  // --vocab-file with --merge-file is GPT-2's BPE (Megatron-LM's GPT2BPETokenizer): 50,257
  // tokens (Radford et al. 2019), which Megatron pads itself.
  if (m.vocab <= 0 && vocab_file) m.vocab = 50257;
  const std::pair<const char*, int64_t> needed[] = {
      {megatron::model_flag_of(&ModelSpec::layers), m.layers},
      {megatron::model_flag_of(&ModelSpec::hidden), m.hidden},
      {megatron::model_flag_of(&ModelSpec::heads), m.heads},
      {megatron::model_flag_of(&ModelSpec::seq_len), m.seq_len},
      {job_field("global_batch")->megatron_flag, out.file.job.global_batch},
      {megatron::model_flag_of(&ModelSpec::vocab), m.vocab}};
  for (const auto& [flag, v] : needed)
    if (v <= 0)
      throw InputError("megatron args", flag,
                       std::string("is needed: the command line does not say it") +
                           (std::string(flag) == "--vocab-size" ? " (its tokenizer's vocabulary is not in the arguments)" : ""));
  check_imported_model(m);
  return out;
}

namespace {

// A plan field's one-to-one Megatron-LM flag (plan_fields.hpp): a switch's presence, an integer's
// value (at least the field's minimum).
template <class Integer>
void read_plan_flag(const PlanField& field, Integer integer, PlanSpec& p) {
  if (field.type == FieldType::on_off) {
    p.*field.on_off = true;
    return;
  }
  p.*field.integer = integer();
  if (p.*field.integer < field.min)
    throw InputError("megatron args", field.megatron_flag, "must be >= " + std::to_string(field.min));
}

// The words of a command line, read one flag at a time.
struct ArgCursor {
  const std::vector<std::string>& args;
  size_t i = 0;
  const std::string& flag() const { return args[i]; }
  std::string value() {
    if (i + 1 >= args.size()) throw InputError("megatron args", flag(), "needs a value");
    return args[++i];
  }
  int64_t integer() {
    const std::string& a = flag();  // before value() moves past it
    return megatron_moe::parse_int(a, value());
  }
  // A number of all of the value, where `ok` holds; else the flag's error, `rule`.
  template <class Ok>
  double number(Ok ok, const char* rule) {
    const std::string& a = args[i];
    const std::string v = value();
    try {
      size_t used = 0;
      const double x = std::stod(v, &used);
      if (used != v.size() || !ok(x)) throw std::invalid_argument(v);
      return x;
    } catch (const std::exception&) {
      throw InputError("megatron args", a, std::string(rule) + " (got \"" + v + "\")");
    }
  }
  double probability() { return number([](double x) { return x >= 0 && x < 1; }, "must be a probability in [0, 1)"); }
  // The words after the flag that are not flags.
  void skip_values() {
    while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;
  }
};

// What the flags say that becomes a field only once all are read.
struct Pending {
  int64_t layers_per_virtual = 0, virtual_stages = 0, recompute_num_layers = 0;
  int64_t train_samples = 0, train_iters = 0, microbatch_group = 0;
  bool gqa = false, rope_scaling = false, megatron_fsdp = false;
  double rope_scaling_factor = megatron::kRopeScalingFactor;
  double attention_dropout = megatron::kDropout;
  std::string recompute_method, sharding = "optim_grads_params", ckpt_format, fp8_format, fp8_recipe = "delayed";
  megatron_moe::Flags moe;
};

// The plan's and the job's flags: parallel sizes, the pipeline, recompute, sharding, precision,
// the batch and the run's length. False for a flag that is none of them.
bool read_parallel_flag(ArgCursor& in, Pending& st, PlanFile& f) {
  const std::string& a = in.flag();
  PlanSpec& p = f.plan;
  if (const PlanField* field = plan_field_of_megatron_flag(a)) read_plan_flag(*field, [&in] { return in.integer(); }, p);
  else if (const JobField* job = job_field_of_megatron_flag(a)) f.job.*job->integer = in.integer();
  else if (a == "--num-layers-per-virtual-pipeline-stage") st.layers_per_virtual = in.integer();
  else if (a == "--virtual-pipeline-model-parallel-size") st.virtual_stages = in.integer();
  else if (a == "--microbatch-group-size-per-virtual-pipeline-stage") st.microbatch_group = in.integer();
  else if (a == "--recompute-granularity") {
    const std::string g = in.value();
    p.recompute = g == "full" ? Recompute::full : g == "selective" ? Recompute::selective
                                                                   : throw InputError("megatron args", a, "must be full or selective");
  } else if (a == "--recompute-method") st.recompute_method = in.value();
  else if (a == "--recompute-num-layers") st.recompute_num_layers = in.integer();
  else if (a == "--use-distributed-optimizer") p.zero = std::max<int64_t>(p.zero, 1);
  else if (a == "--use-megatron-fsdp") st.megatron_fsdp = true;
  else if (a == "--data-parallel-sharding-strategy") st.sharding = in.value();
  else if (a == "--ckpt-format") st.ckpt_format = in.value();
  else if (a == "--fp8-format") st.fp8_format = in.value();
  else if (a == "--fp8-recipe") st.fp8_recipe = in.value();
  else if (a == "--bf16") f.job.dtype = Dtype::bf16;
  else if (a == "--fp16") f.job.dtype = Dtype::fp16;
  else if (a == "--train-iters") st.train_iters = in.integer();
  else if (a == "--train-samples") st.train_samples = in.integer();
  else if (a == "--attention-backend") {
    const std::string v = in.value();  // AttnBackend: flash, fused, unfused, local, auto
    if (v == "unfused" || v == "local") f.job.attention = Attention::unfused;
    else if (v == "flash" || v == "fused") f.job.attention = Attention::fused;
    else if (v != "auto")
      throw InputError("megatron args", a, "must be flash, fused, unfused, local or auto (got \"" + v + "\")");
  } else if (a == "--cp-comm-type") {
    // Megatron-Core takes one type, or one per layer; Parallax models the p2p ring.
    std::vector<std::string> types{in.value()};
    while (in.i + 1 < in.args.size() && in.args[in.i + 1].rfind("--", 0) != 0) types.push_back(in.args[++in.i]);
    for (const std::string& t : types)
      if (t != "p2p")
        throw InputError("megatron args", a, "only p2p, the ring Parallax models, is supported (got \"" + t + "\")");
  } else {
    return false;
  }
  return true;
}

// The model's flags: its shape, positions, norm, biases, dropout and experts. False for a flag
// that is none of them.
bool read_model_flag(ArgCursor& in, Pending& st, ModelSpec& m) {
  const std::string& a = in.flag();
  if (a == "--rotary-base") m.rope_base = static_cast<double>(in.integer());
  else if (a == "--use-rope-scaling") st.rope_scaling = true;
  else if (a == "--rope-scaling-factor") st.rope_scaling_factor = in.number([](double x) { return x >= 1; }, "must be a number >= 1");
  else if (a == "--group-query-attention") st.gqa = true;
  else if (a == "--kv-channels") {
    m.kv_channels = in.integer();
    if (m.kv_channels < 1)
      throw InputError("megatron args", a, "must be >= 1 (got " + std::to_string(m.kv_channels) + ")");
  } else if (a == "--max-position-embeddings") in.integer();
  else if (const megatron::ModelFlag* mf = megatron::model_flag(a)) m.*mf->field = in.integer();
  else if (a == "--swiglu") m.activation = Activation::swiglu;
  else if (a == "--position-embedding-type") m.position = in.value() == "rope" ? Position::rope : Position::learned;
  else if (a == "--normalization") m.norm = in.value() == "RMSNorm" ? Norm::rmsnorm : Norm::layernorm;
  else if (a == "--untie-embeddings-and-output-weights") m.tied_embeddings = false;
  else if (a == "--disable-bias-linear") m.linear_bias = false;
  else if (a == "--hidden-dropout") m.dropout = in.probability();
  else if (a == "--attention-dropout") st.attention_dropout = in.probability();
  else return megatron_moe::read_flag(a, [&in] { return in.value(); }, st.moe);
  return true;
}

// Data, tokenizer, learning-rate schedule, the stack's overlaps: read past, not part of the plan.
bool skipped_flag(ArgCursor& in) {
  const std::string& a = in.flag();
  if (a == "--mock-data" || a == "--overlap-grad-reduce" || a == "--overlap-param-gather" ||
      a == "--tp-comm-overlap" || a == "--no-overlap-p2p-communication")
    return true;
  if (a == "--data-path" || a == "--split" || a == "--tokenizer-type" || a == "--tokenizer-model" || a == "--lr" ||
      a == "--min-lr" || a == "--lr-decay-style" || a == "--lr-warmup-fraction") {
    in.value();
    return true;
  }
  return false;
}

// Megatron-LM's defaults for what the flags leave out, and the model reader's rules on the rest.
void finish_model(const Pending& st, ModelSpec& m, PlanSpec& p) {
  if (!st.gqa) m.kv_heads = m.heads;
  m.set_head_dim(m.kv_channels);  // the default, when stated, kept as 0
  // Megatron-LM's default FFN (arguments.py): 4h, or with SwiGLU 2/3 of it in multiples of 64.
  // It comes before the MoE flags: --moe-ffn-hidden-size defaults to it.
  if (m.ffn_hidden <= 0)
    m.ffn_hidden = m.activation == Activation::swiglu ? (4 * m.hidden * 2 / 3) / 64 * 64 : 4 * m.hidden;
  m.moe = MoeSpec{};
  megatron_moe::apply(st.moe, m, p);
  if (m.position == Position::rope) {
    if (m.rope_base < 1) throw InputError("megatron args", "--rotary-base", "must be >= 1");
    // Rotate-half RoPE pairs dimension i of a head with i + head_dim / 2 (the model reader's rule).
    if (m.kv_channels % 2 != 0)
      throw InputError("megatron args", "--kv-channels",
                       "rope positions need an even head_dim (got " + std::to_string(m.kv_channels) + ")");
    if (st.rope_scaling)
      m.rope_scaling = {st.rope_scaling_factor, megatron::kRopeLowFreq, megatron::kRopeHighFreq,
                        megatron::kRopeOriginalMax};
  } else {  // Megatron-LM reads the RoPE flags only with rope
    m.rope_base = ModelSpec{}.rope_base;
    m.rope_scaling = {};
  }
}

// Megatron FSDP's sharding as a ZeRO stage.
void finish_sharding(const Pending& st, PlanSpec& p) {
  if (!st.megatron_fsdp) return;
  if (st.sharding == "optim_grads_params") p.zero = 3;
  else if (st.sharding == "optim_grads") p.zero = 2;
  else if (st.sharding == "optim") p.zero = 1;
  else if (st.sharding == "no_shard") p.zero = 0;
  else throw InputError("megatron args", "--data-parallel-sharding-strategy",
                        "must be no_shard, optim, optim_grads or optim_grads_params (got \"" + st.sharding + "\")");
  if (st.ckpt_format != "fsdp_dtensor")
    throw InputError("megatron args", "--ckpt-format",
                     "must be fsdp_dtensor with --use-megatron-fsdp (Megatron-LM's validate_args)");
}

// Transformer Engine's fp8: the format and a recipe Parallax models, on a GPU that runs it.
void finish_fp8(const Pending& st, PlanFile& f) {
  if (st.fp8_format.empty()) return;
  if (st.fp8_format != "hybrid" && st.fp8_format != "e4m3")
    throw InputError("megatron args", "--fp8-format", "must be hybrid or e4m3 (got \"" + st.fp8_format + "\")");
  std::optional<Fp8Scaling> scaling;
  for (Fp8Scaling s : kFp8Scalings)
    if (st.fp8_recipe == megatron::fp8_recipe(s)) scaling = s;
  if (!scaling)
    throw InputError("megatron args", "--fp8-recipe",
                     "must be delayed, tensorwise or mxfp8, the recipes Parallax models (got \"" + st.fp8_recipe + "\")");
  if (!fp8_scaling_supported(*scaling, f.cluster.gpu))
    throw InputError("megatron args", "--fp8-recipe",
                     "mxfp8 needs Blackwell (compute capability 10 or later), not " + f.cluster.gpu.name);
  f.job.dtype = Dtype::fp8;
  f.job.fp8.scaling = *scaling;
}

// The virtual stages, recompute's layers, the tokens, the schedule, and the data-parallel size
// from the GPUs.
void finish_pipeline(const Pending& st, PlanFile& f) {
  const ModelSpec& m = f.model;
  PlanSpec& p = f.plan;
  p.vpp = st.layers_per_virtual > 0 ? (m.layers + p.embedding_in_split + p.loss_in_split) / (p.pp * st.layers_per_virtual)
          : st.virtual_stages > 0  ? st.virtual_stages
                                   : 1;
  // Megatron's block recompute counts the layers of each model chunk: vpp chunks per stage.
  if (p.recompute == Recompute::full && st.recompute_method == "block") p.recompute_layers = st.recompute_num_layers * p.vpp;
  if (st.train_iters > 0) f.job.tokens = static_cast<double>(st.train_iters * f.job.global_batch * m.seq_len);
  if (st.train_samples > 0) f.job.tokens = static_cast<double>(st.train_samples * m.seq_len);
  // Megatron-Core reads the group only when interleaving; pp, its default, is stored as 0.
  if (p.vpp > 1 && st.microbatch_group > 0 && st.microbatch_group != p.pp) p.microbatch_group = st.microbatch_group;
  p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  if (p.tp < 1 || p.pp < 1 || f.gpus % (p.tp * p.cp * p.pp) != 0)
    throw InputError("megatron args", p.cp > 1 ? "--context-parallel-size" : "--tensor-model-parallel-size",
                     "tp (" + std::to_string(p.tp) + ")" +
                         (p.cp > 1 ? " x cp (" + std::to_string(p.cp) + ")" : std::string()) + " x pp (" +
                         std::to_string(p.pp) + ") must divide the GPU count (" + std::to_string(f.gpus) +
                         ", --gpus)");
  if (p.micro_batch < 1) throw InputError("megatron args", "--micro-batch-size", "must be >= 1");
  p.dp = f.gpus / (p.tp * p.cp * p.pp);
  p.num_micro_batches = f.job.global_batch / (p.micro_batch * p.dp);
}

// The base with what the flags say of the model, plan and job, every other field at Megatron-LM's
// default. A flag it does not know is refused, or with `ignored` listed there (its values skipped).
PlanFile parse_args(const std::vector<std::string>& args, const PlanFile& base,
                    std::vector<std::string>* ignored) {
  PlanFile f = base;
  ModelSpec& m = f.model;
  f.plan = PlanSpec{};
  f.plan.order = base.plan.order;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.position = Position::learned;
  m.rope_base = ModelSpec{}.rope_base;  // Megatron-LM's --rotary-base default, 10000
  m.rope_scaling = {};
  m.tied_embeddings = true;
  m.linear_bias = true;
  f.job.dtype = Dtype::fp32;
  Pending st;
  for (ArgCursor in{args}; in.i < args.size(); ++in.i) {
    const std::string& a = in.flag();
    if (read_parallel_flag(in, st, f) || read_model_flag(in, st, m) || skipped_flag(in)) continue;
    if (ignored != nullptr && a.rfind("--", 0) == 0) {
      if (std::find(ignored->begin(), ignored->end(), a) == ignored->end()) ignored->push_back(a);
      in.skip_values();
    } else if (ignored == nullptr) {
      throw InputError("megatron args", a, "unknown argument");
    }  // else a word of the script around the flags
  }
  finish_model(st, m, f.plan);
  finish_sharding(st, f.plan);
  finish_fp8(st, f);
  if (st.attention_dropout != m.dropout)
    throw InputError("megatron args", "--attention-dropout",
                     "must equal --hidden-dropout: the model has one dropout probability");
  finish_pipeline(st, f);
  return f;
}

}  // namespace

}  // namespace parallax
