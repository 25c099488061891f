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
      {"--global-batch-size", out.file.job.global_batch},
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

PlanFile parse_args(const std::vector<std::string>& args, const PlanFile& base,
                    std::vector<std::string>* ignored) {
  PlanFile f = base;
  ModelSpec& m = f.model;
  PlanSpec& p = f.plan;
  p = PlanSpec{};
  p.order = base.plan.order;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.position = Position::learned;
  m.rope_base = ModelSpec{}.rope_base;  // Megatron-LM's --rotary-base default, 10000
  m.rope_scaling = {};
  m.tied_embeddings = true;
  m.linear_bias = true;
  f.job.dtype = Dtype::fp32;
  std::map<std::string, std::string> kv;
  int64_t layers_per_virtual = 0;
  bool gqa = false, rope_scaling = false;
  double rope_scaling_factor = megatron::kRopeScalingFactor;
  double attention_dropout = megatron::kDropout;
  std::string recompute_method;
  int64_t recompute_num_layers = 0;
  bool megatron_fsdp = false;
  int64_t virtual_stages = 0, train_samples = 0, microbatch_group = 0, train_iters = 0;
  std::string sharding = "optim_grads_params", ckpt_format, fp8_format, fp8_recipe = "delayed";
  megatron_moe::Flags moe;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw InputError("megatron args", a, "needs a value");
      return args[++i];
    };
    auto probability = [&]() -> double {
      const std::string v = value();
      try {
        size_t used = 0;
        const double x = std::stod(v, &used);
        if (used != v.size() || x < 0 || x >= 1) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw InputError("megatron args", a, "must be a probability in [0, 1) (got \"" + v + "\")");
      }
    };
    auto integer = [&]() { return megatron_moe::parse_int(a, value()); };
    if (const PlanField* field = plan_field_of_megatron_flag(a)) read_plan_flag(*field, integer, p);
    else if (a == "--num-layers-per-virtual-pipeline-stage") layers_per_virtual = integer();
    else if (a == "--global-batch-size") f.job.global_batch = integer();
    else if (a == "--recompute-granularity") {
      const std::string g = value();
      p.recompute = g == "full" ? Recompute::full : g == "selective" ? Recompute::selective
                                                                     : throw InputError("megatron args", a, "must be full or selective");
    } else if (a == "--recompute-method") recompute_method = value();
    else if (a == "--recompute-num-layers") recompute_num_layers = integer();
    else if (a == "--use-distributed-optimizer") p.zero = std::max<int64_t>(p.zero, 1);
    else if (a == "--use-megatron-fsdp") megatron_fsdp = true;
    else if (a == "--data-parallel-sharding-strategy") sharding = value();
    else if (a == "--ckpt-format") ckpt_format = value();
    else if (a == "--fp8-format") fp8_format = value();
    else if (a == "--mock-data" || a == "--overlap-grad-reduce" || a == "--overlap-param-gather" ||
             a == "--tp-comm-overlap" || a == "--no-overlap-p2p-communication")
      continue;  // data, tokenizer, schedule, the stack's overlaps: not part of the plan
    else if (a == "--data-path" || a == "--split" || a == "--tokenizer-type" ||
             a == "--tokenizer-model" || a == "--lr" || a == "--min-lr" ||
             a == "--lr-decay-style" || a == "--lr-warmup-fraction")
      value();
    else if (a == "--fp8-recipe") fp8_recipe = value();
    else if (a == "--attention-backend") {
      const std::string v = value();  // AttnBackend: flash, fused, unfused, local, auto
      if (v == "unfused" || v == "local") f.job.attention = Attention::unfused;
      else if (v == "flash" || v == "fused") f.job.attention = Attention::fused;
      else if (v != "auto")
        throw InputError("megatron args", a, "must be flash, fused, unfused, local or auto (got \"" + v + "\")");
    }
    else if (a == "--rotary-base") m.rope_base = static_cast<double>(integer());
    else if (a == "--use-rope-scaling") rope_scaling = true;
    else if (a == "--rope-scaling-factor") {
      const std::string v = value();
      try {
        size_t used = 0;
        rope_scaling_factor = std::stod(v, &used);
        if (used != v.size() || !(rope_scaling_factor >= 1)) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw InputError("megatron args", a, "must be a number >= 1 (got \"" + v + "\")");
      }
    }
    else if (a == "--group-query-attention") gqa = true;
    else if (a == "--kv-channels") {
      m.kv_channels = integer();
      if (m.kv_channels < 1)
        throw InputError("megatron args", a,
                         "must be >= 1 (got " + std::to_string(m.kv_channels) + ")");
    }
    else if (a == "--max-position-embeddings") integer();
    else if (const megatron::ModelFlag* mf = megatron::model_flag(a)) m.*mf->field = integer();
    else if (a == "--swiglu") m.activation = Activation::swiglu;
    else if (a == "--position-embedding-type") {
      m.position = value() == "rope" ? Position::rope : Position::learned;
    } else if (a == "--normalization") {
      m.norm = value() == "RMSNorm" ? Norm::rmsnorm : Norm::layernorm;
    } else if (a == "--untie-embeddings-and-output-weights") m.tied_embeddings = false;
    else if (a == "--disable-bias-linear") m.linear_bias = false;
    else if (a == "--hidden-dropout") m.dropout = probability();
    else if (a == "--attention-dropout") attention_dropout = probability();
    else if (a == "--bf16") f.job.dtype = Dtype::bf16;
    else if (a == "--fp16") f.job.dtype = Dtype::fp16;
    else if (a == "--train-iters") {
      train_iters = integer();
    } else if (a == "--virtual-pipeline-model-parallel-size") {
      virtual_stages = integer();
    } else if (a == "--train-samples") {
      train_samples = integer();
    } else if (a == "--cp-comm-type") {
      // Megatron-Core takes one type, or one per layer; Parallax models the p2p ring.
      std::vector<std::string> types{value()};
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) types.push_back(args[++i]);
      for (const std::string& t : types)
        if (t != "p2p")
          throw InputError("megatron args", a, "only p2p, the ring Parallax models, is supported (got \"" + t + "\")");
    } else if (megatron_moe::read_flag(a, value, moe)) {
      continue;
    } else if (a == "--microbatch-group-size-per-virtual-pipeline-stage") {
      microbatch_group = integer();
    } else if (ignored != nullptr && a.rfind("--", 0) == 0) {
      if (std::find(ignored->begin(), ignored->end(), a) == ignored->end()) ignored->push_back(a);
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;  // its values
    } else if (ignored != nullptr) {
      continue;  // a word of the script around the flags
    } else {
      throw InputError("megatron args", a, "unknown argument");
    }
  }
  if (!gqa) m.kv_heads = m.heads;
  m.set_head_dim(m.kv_channels);  // the default, when stated, kept as 0
  // Megatron-LM's default FFN (arguments.py): 4h, or with SwiGLU 2/3 of it in multiples of 64.
  // It comes before the MoE flags: --moe-ffn-hidden-size defaults to it.
  if (m.ffn_hidden <= 0)
    m.ffn_hidden = m.activation == Activation::swiglu ? (4 * m.hidden * 2 / 3) / 64 * 64 : 4 * m.hidden;
  m.moe = MoeSpec{};
  megatron_moe::apply(moe, m, p);
  if (m.position == Position::rope) {
    if (m.rope_base < 1) throw InputError("megatron args", "--rotary-base", "must be >= 1");
    // Rotate-half RoPE pairs dimension i of a head with i + head_dim / 2 (the model reader's rule).
    if (m.kv_channels % 2 != 0)
      throw InputError("megatron args", "--kv-channels",
                       "rope positions need an even head_dim (got " +
                           std::to_string(m.kv_channels) + ")");
    if (rope_scaling) m.rope_scaling = {rope_scaling_factor, megatron::kRopeLowFreq, megatron::kRopeHighFreq,
                                        megatron::kRopeOriginalMax};
  } else {  // Megatron-LM reads the RoPE flags only with rope
    m.rope_base = ModelSpec{}.rope_base;
    m.rope_scaling = {};
  }
  if (megatron_fsdp) {
    if (sharding == "optim_grads_params") p.zero = 3;
    else if (sharding == "optim_grads") p.zero = 2;
    else if (sharding == "optim") p.zero = 1;
    else if (sharding == "no_shard") p.zero = 0;
    else throw InputError("megatron args", "--data-parallel-sharding-strategy",
                          "must be no_shard, optim, optim_grads or optim_grads_params (got \"" + sharding + "\")");
    if (ckpt_format != "fsdp_dtensor")
      throw InputError("megatron args", "--ckpt-format",
                       "must be fsdp_dtensor with --use-megatron-fsdp (Megatron-LM's validate_args)");
  }
  if (!fp8_format.empty()) {
    if (fp8_format != "hybrid" && fp8_format != "e4m3")
      throw InputError("megatron args", "--fp8-format", "must be hybrid or e4m3 (got \"" + fp8_format + "\")");
    std::optional<Fp8Scaling> scaling;
    for (Fp8Scaling s : kFp8Scalings)
      if (fp8_recipe == megatron::fp8_recipe(s)) scaling = s;
    if (!scaling)
      throw InputError("megatron args", "--fp8-recipe",
                       "must be delayed, tensorwise or mxfp8, the recipes Parallax models (got \"" + fp8_recipe + "\")");
    if (!fp8_scaling_supported(*scaling, f.cluster.gpu))
      throw InputError("megatron args", "--fp8-recipe",
                       "mxfp8 needs Blackwell (compute capability 10 or later), not " + f.cluster.gpu.name);
    f.job.dtype = Dtype::fp8;
    f.job.fp8.scaling = *scaling;
  }
  if (attention_dropout != m.dropout)
    throw InputError("megatron args", "--attention-dropout",
                     "must equal --hidden-dropout: the model has one dropout probability");
  p.vpp = layers_per_virtual > 0 ? (m.layers + p.embedding_in_split + p.loss_in_split) / (p.pp * layers_per_virtual)
          : virtual_stages > 0  ? virtual_stages
                                : 1;
  // Megatron's block recompute counts the layers of each model chunk: vpp chunks per stage.
  if (p.recompute == Recompute::full && recompute_method == "block") {
    p.recompute_layers = recompute_num_layers * p.vpp;
  }
  if (train_iters > 0) f.job.tokens = static_cast<double>(train_iters * f.job.global_batch * m.seq_len);
  if (train_samples > 0) f.job.tokens = static_cast<double>(train_samples * m.seq_len);
  // Megatron-Core reads the group only when interleaving; pp, its default, is stored as 0.
  if (p.vpp > 1 && microbatch_group > 0 && microbatch_group != p.pp) p.microbatch_group = microbatch_group;
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
  return f;
}

}  // namespace

}  // namespace parallax
