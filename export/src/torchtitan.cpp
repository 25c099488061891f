#include "parallax/export/torchtitan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "launch_common.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {
// Named (the export library is a unity build: anonymous namespaces of its files share one unit).
namespace torchtitan_export {
namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw InputError("export", "--format torchtitan", why);
}

std::string n(int64_t x) { return std::to_string(x); }

// Micro-batches per pipeline per step: the plan's, or what the global batch leaves (0 in a plan).
int64_t micro_batches(const PlanFile& f) {
  const PlanSpec& p = f.plan;
  return p.num_micro_batches != 0 ? p.num_micro_batches
                                  : f.job.global_batch / (p.micro_batch * p.dp);
}

// A TorchTitan llama3 flavor: TransformerModelArgs as torchtitan/models/llama3/__init__.py
// (v0.2.2) names them. n_kv_heads 0: n_heads (its None); ffn_dim_multiplier 0: none.
struct Flavor {
  const char* name;
  int64_t dim, n_layers, n_heads, n_kv_heads, vocab_size, multiple_of;
  double ffn_dim_multiplier, rope_theta;
};

// The flavors with TorchTitan's default attention (SDPA, causal), which its stack preset costs;
// "8B_flex" and the like are the same shapes with FlexAttention or varlen attention.
constexpr std::array<Flavor, 4> kLlama3Flavors{{
    {"debugmodel", 256, 6, 16, 0, 2048, 256, 0, 500000},
    {"8B", 4096, 32, 32, 8, 128256, 1024, 1.3, 500000},
    {"70B", 8192, 80, 64, 8, 128256, 4096, 1.3, 500000},
    {"405B", 16384, 126, 128, 8, 128256, 4096, 1.2, 500000},
}};

// TorchTitan's FeedForward width (torchtitan/models/llama3/model/model.py): int(2 * 4 dim / 3),
// times ffn_dim_multiplier (truncated), rounded up to a multiple of multiple_of.
int64_t flavor_ffn_hidden(const Flavor& v) {
  auto hidden = static_cast<int64_t>(2 * (4 * v.dim) / 3);
  if (v.ffn_dim_multiplier > 0)
    hidden = static_cast<int64_t>(v.ffn_dim_multiplier * static_cast<double>(hidden));
  return v.multiple_of * ((hidden + v.multiple_of - 1) / v.multiple_of);
}

// What differs between the model and the flavor, each as "field model (flavor)".
std::vector<std::string> shape_differences(const ModelSpec& m, const Flavor& v) {
  std::vector<std::string> d;
  auto check = [&](const char* field, int64_t model, int64_t flavor) {
    if (model != flavor)
      d.push_back(std::string(field) + " " + n(model) + " (" + v.name + ": " + n(flavor) + ")");
  };
  check("layers", m.layers, v.n_layers);
  check("hidden", m.hidden, v.dim);
  check("heads", m.heads, v.n_heads);
  check("kv_heads", m.kv_head_count(), v.n_kv_heads > 0 ? v.n_kv_heads : v.n_heads);
  check("ffn_hidden", m.ffn_hidden, flavor_ffn_hidden(v));
  check("vocab", m.vocab, v.vocab_size);
  if (m.rope_base != v.rope_theta) {
    std::ostringstream s;
    s << "rope_base " << m.rope_base << " (" << v.name << ": " << v.rope_theta << ")";
    d.push_back(s.str());
  }
  return d;
}

// The flavor with the model's shape, or a refusal naming the nearest (fewest differences).
const Flavor& llama3_flavor(const ModelSpec& m) {
  const Flavor* nearest = nullptr;
  std::vector<std::string> nearest_diff;
  for (const Flavor& v : kLlama3Flavors) {
    std::vector<std::string> d = shape_differences(m, v);
    if (d.empty()) return v;
    if (nearest == nullptr || d.size() < nearest_diff.size()) {
      nearest = &v;
      nearest_diff = std::move(d);
    }
  }
  std::string diff;
  for (const std::string& s : nearest_diff) diff += (diff.empty() ? "" : ", ") + s;
  const std::string flavors = "llama3 flavor of v0.2.2 (debugmodel, 8B, 70B, 405B)";
  refuse("TorchTitan has no flavor with this model's shape: " + m.name + " is no " + flavors +
         " (nearest: " + nearest->name + ", which differs in " + diff + ")");
}

// TorchTitan's llama3 block: SwiGLU, RMSNorm, RoPE, bias-free linear layers, untied output, no
// dropout, heads of hidden / heads.
void check_architecture(const ModelSpec& m) {
  std::string why;
  if (m.activation != Activation::swiglu)
    why = std::string("activation ") + to_string(m.activation);
  else if (m.norm != Norm::rmsnorm)
    why = std::string("norm ") + to_string(m.norm);
  else if (m.linear_bias)
    why = "biases on the linear layers";
  else if (m.tied_embeddings)
    why = "tied input and output embeddings";
  else if (m.has_dropout())
    why = "dropout";
  else if (m.decoupled_head_dim())
    why = "heads of " + n(m.head_dim()) + " (not hidden / heads)";
  if (!why.empty())
    refuse(
        "TorchTitan's llama3 is SwiGLU, RMSNorm and RoPE without biases, tied embeddings or "
        "dropout; " +
        m.name + " has " + why);
}

// TorchTitan's device mesh is (pp, dp_replicate x dp_shard, cp, tp), outermost first
// (torchtitan/distributed/parallel_dims.py): the plan's order, innermost first, must be tp, cp,
// dp, pp (cp anywhere when it is 1).
void check_order(const PlanSpec& p) {
  std::string order = placement_order(p.order, p.cp);
  if (p.cp == 1) {
    for (const char* cut : {"-cp", "cp-"})
      if (const size_t at = order.find(cut); at != std::string::npos) order.erase(at, 3);
  }
  const std::string torchtitan = p.cp > 1 ? "tp-cp-dp-pp" : "tp-dp-pp";
  if (order != torchtitan)
    refuse("TorchTitan places ranks " + torchtitan +
           " (innermost first; its device mesh is pp, dp, cp, tp); the plan's order is " + order);
}

// What TorchTitan cannot run as planned: the plan's own rules, the TorchTitan stack's capability
// table (as the planner applies it: MoE, positions, ZeRO-1, DDP beside other parallelism, ...), the
// precisions it trains in, its rank order and its sequence-length rule.
void check_runs(const PlanFile& f) {
  const ModelSpec& m = f.model;
  const PlanSpec& p = f.plan;
  validate_plan(m, f.cluster, f.job, p, f.gpus, "export");
  JobSpec torchtitan = f.job;
  torchtitan.framework = "torchtitan";
  torchtitan.capabilities = load_stack("torchtitan").capabilities;
  if (const auto r = stack_refusal(m, torchtitan, p)) refuse(r->rule + " (" + r->path + ")");
  if (f.job.dtype == Dtype::fp16)
    refuse("TorchTitan trains in bf16 or fp32 (training.mixed_precision_param), not fp16");
  if (f.job.dtype == Dtype::tf32)
    refuse("TorchTitan sets no TF32 matmul precision: plan fp32 or bf16");
  if (f.job.dtype == Dtype::fp8 && f.job.fp8.scaling == Fp8Scaling::delayed)
    refuse(
        "TorchTitan's float8 (torchao) scales dynamically (tensorwise or rowwise); the job asks "
        "for delayed scaling");
  if (m.seq_len % (2 * p.tp * p.cp) != 0)
    refuse("TorchTitan needs seq_len divisible by tp x 2 cp (parallel_dims.seq_len_divisor): " +
           n(m.seq_len) + " by " + n(2 * p.tp * p.cp));
  check_order(p);
  check_architecture(m);
}

// The transformer layers of each virtual pipeline stage v = c pp + s (chunk c of pipeline rank s,
// TorchTitan's "loop" placement for 1F1B, GPipe and Interleaved1F1B): the plan's split, in model
// order. With the embedding or loss counted, each stage holds (layers + counted) / (pp vpp), the
// first and last one fewer; otherwise rank s's stage_layers split over its vpp chunks, the first
// ones a layer more where they do not divide.
std::vector<std::vector<int64_t>> virtual_stage_layers(const ModelSpec& m, const PlanSpec& p) {
  const int64_t stages = p.pp * p.vpp;
  std::vector<int64_t> sizes(static_cast<size_t>(stages));
  const int64_t e = p.embedding_in_split, l = p.loss_in_split;
  for (int64_t v = 0; v < stages; ++v) {
    if (e || l) {
      sizes[v] = (m.layers + e + l) / stages - (v == 0 ? e : 0) - (v == stages - 1 ? l : 0);
    } else {
      const int64_t s = v % p.pp, c = v / p.pp, rank_layers = stage_layers(m.layers, p, s);
      sizes[v] = rank_layers / p.vpp + (c < rank_layers % p.vpp ? 1 : 0);
    }
  }
  std::vector<std::vector<int64_t>> layers(static_cast<size_t>(stages));
  int64_t next = 0;
  for (int64_t v = 0; v < stages; ++v)
    for (int64_t k = 0; k < sizes[v]; ++k) layers[v].push_back(next++);
  if (next != m.layers)
    refuse("the plan's pipeline split covers " + n(next) + " of " + n(m.layers) + " layers");
  return layers;
}

// Full recompute of K layers per pipeline rank (Megatron's block method): TorchTitan's full
// activation checkpointing wraps every block, so only a K covering every rank's layers runs.
void check_recompute(const PlanSpec& p,
                     const std::vector<std::vector<int64_t>>& stage_layer_lists) {
  if (p.recompute != Recompute::full || p.recompute_layers == 0) return;
  for (int64_t s = 0; s < p.pp; ++s) {
    int64_t rank_layers = 0;
    for (int64_t c = 0; c < p.vpp; ++c)
      rank_layers += static_cast<int64_t>(stage_layer_lists[c * p.pp + s].size());
    if (p.recompute_layers < rank_layers)
      refuse(
          "TorchTitan's full activation checkpointing wraps every transformer block; the "
          "plan recomputes " +
          n(p.recompute_layers) + " of pipeline rank " + n(s) + "'s " + n(rank_layers) + " layers");
  }
}

// A TOML document written in order: sections, keys and comments.
class Toml {
 public:
  // One "# " line per line of c.
  void comment(const std::string& c) {
    size_t begin = 0;
    for (size_t end = c.find('\n'); begin <= c.size(); end = c.find('\n', begin)) {
      if (end == std::string::npos) end = c.size();
      text_ += "# " + c.substr(begin, end - begin) + "\n";
      begin = end + 1;
    }
  }
  void section(const std::string& name) { text_ += "\n[" + name + "]\n"; }
  void raw(const std::string& key, const std::string& value, const std::string& note = "") {
    text_ += key + " = " + value + (note.empty() ? "" : "  # " + note) + "\n";
  }
  void integer(const std::string& key, int64_t v, const std::string& note = "") {
    raw(key, n(v), note);
  }
  void boolean(const std::string& key, bool v, const std::string& note = "") {
    raw(key, v ? "true" : "false", note);
  }
  void string(const std::string& key, const std::string& v, const std::string& note = "") {
    raw(key, quoted(v), note);
  }
  const std::string& text() const { return text_; }

  // A TOML basic string: quotes, backslashes and control characters escaped.
  static std::string quoted(const std::string& s) {
    std::string q = "\"";
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        q += '\\';
        q += c;
      } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char u[8];
        std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        q += u;
      } else {
        q += c;
      }
    }
    return q + "\"";
  }

 private:
  std::string text_;
};

// Steps: the benchmark's iterations, else the job's tokens over global batch x sequence (rounded
// up), else a measurement run of 100, as the Megatron-LM launch's --train-iters.
int64_t training_steps(const PlanFile& f, const LaunchOptions& o) {
  if (o.benchmark_iters > 0) return o.benchmark_iters;
  constexpr int64_t kMeasurementSteps = 100;
  if (f.job.tokens <= 0) return kMeasurementSteps;
  const auto tokens_per_step = static_cast<double>(f.job.global_batch * f.model.seq_len);
  return static_cast<int64_t>(std::ceil(f.job.tokens / tokens_per_step));
}

void write_header(Toml& t, const PlanFile& f, const Flavor& flavor, int64_t steps,
                  const LaunchOptions& o) {
  const PlanSpec& p = f.plan;
  t.comment(
      "TorchTitan job config for " + f.model.name + " (llama3 flavor " + flavor.name + ") on " +
      n(f.gpus) + " GPUs:\ndp " + n(p.dp) +
      (p.zero == 0 ? " (DDP)" : " (FSDP2, ZeRO-" + n(p.zero) + ")") + " x cp " + n(p.cp) +
      " x tp " + n(p.tp) + " x pp " + n(p.pp) +
      ", written by parallax export --format torchtitan for\n"
      "TorchTitan v0.2.2, the last release that reads TOML job configs (python -m\n"
      "torchtitan.train --job.config_file FILE; its main branch since pytorch/torchtitan#2386\n"
      "takes --module/--config instead).");
  t.comment(
      "Parallax planned the parallel layout, batch and precision; the optimizer, learning-rate\n"
      "schedule, data and tokenizer are placeholders, and " +
      (o.benchmark_iters > 0 ? "the steps a benchmark's " + n(steps) + ", each logged."
       : f.job.tokens > 0    ? "the steps the plan's tokens."
                             : "without --tokens the steps 100, a measurement run."));
  // TorchTitan's RoPEScalingArgs defaults, which every llama3 flavor applies.
  constexpr int64_t kOriginalMaxPosition = 8192;
  if (f.model.rope_scaling != RopeScaling{8, 1, 4, kOriginalMaxPosition})
    t.comment(
        "TorchTitan's llama3 always scales RoPE as Llama 3.1 does (factor 8, frequency\n"
        "factors 1 and 4, original context 8192); " +
        f.model.name + " does not: the same shapes\nand cost, other frequencies.");
  if (p.tp > 1 && !p.sequence_parallel)
    t.comment("The plan has tp " + n(p.tp) +
              " without sequence parallelism; TorchTitan's TP always shards the\n"
              "sequence (SequenceParallel norms): less activation memory than planned, the same\n"
              "bytes moved.");
  if (f.job.framework != "torchtitan")
    t.comment(
        "The plan was predicted for stack \"" + f.job.framework +
        "\", not torchtitan: its times and memory\nassume that stack's kernels and overlaps.");
}

void write_job_model(Toml& t, const PlanFile& f, const Flavor& flavor, const LaunchOptions& o) {
  t.section("job");
  t.string("description",
           "Parallax plan: " + f.model.name + " on " + n(f.gpus) + " x " + f.cluster.gpu.name);
  t.string("dump_folder", "./outputs/" + o.job_name);
  t.section("model");
  t.string("name", "llama3");
  t.string("flavor", flavor.name);
  if (o.tokenizer_model.empty())
    t.string("hf_assets_path", "./tests/assets/tokenizer",
             "TorchTitan's test tokenizer; placeholder");
  else
    t.string("hf_assets_path", o.tokenizer_model);
  if (f.job.dtype == Dtype::fp8)
    t.raw("converters", f.job.fp8.scaling == Fp8Scaling::mxfp8 ? "[\"quantize.linear.mx\"]"
                                                               : "[\"quantize.linear.float8\"]");
}

void write_schedule(Toml& t, int64_t steps) {
  t.section("optimizer");
  t.string("name", "AdamW");
  t.raw("lr", "3e-4", "placeholder, as the Megatron-LM launch's");
  t.section("lr_scheduler");
  t.integer("warmup_steps", std::max<int64_t>(1, (steps + 99) / 100), "1% of the steps");
  t.string("decay_type", "cosine");
  t.raw("min_lr_factor", "0.1");
}

void write_training(Toml& t, const PlanFile& f, const LaunchOptions& o, int64_t steps) {
  const PlanSpec& p = f.plan;
  t.section("training");
  // With a pipeline the local batch is every micro-batch of the step, cut into pipeline
  // micro-batches of micro_batch; without, one micro-batch per forward, accumulated.
  if (p.pp > 1)
    t.integer("local_batch_size", p.micro_batch * micro_batches(f),
              "micro_batch x num_micro_batches");
  else
    t.integer("local_batch_size", p.micro_batch);
  t.integer(
      "global_batch_size", f.job.global_batch,
      p.pp > 1 ? "no gradient accumulation" : n(micro_batches(f)) + " micro-batches accumulated");
  t.integer("seq_len", f.model.seq_len);
  t.integer("steps", steps);
  if (o.data_path.empty()) {
    t.string("dataset", "c4_test",
             "TorchTitan's bundled test data (tests/assets/c4_test); placeholder");
  } else {
    t.string("dataset", "c4");
    t.string("dataset_path", o.data_path);
  }
  t.string("mixed_precision_param", f.job.dtype == Dtype::fp32 ? "float32" : "bfloat16");
  t.string("mixed_precision_reduce", "float32");
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::gpipe:
      return "GPipe";
    case Schedule::one_f_one_b:
      return "1F1B";
    case Schedule::interleaved:
      return "Interleaved1F1B";
  }
  return "1F1B";
}

// The pipeline: PyTorch's schedule class by name, the pipeline micro-batch, and the plan's split
// as module_fqns_per_model_part (one list per virtual stage), so that TorchTitan builds the
// stages the plan costed instead of its own cut.
void write_pipeline(Toml& t, const PlanFile& f,
                    const std::vector<std::vector<int64_t>>& stage_layer_lists) {
  const PlanSpec& p = f.plan;
  t.integer("pipeline_parallel_degree", p.pp);
  if (p.pp == 1) return;
  t.string("pipeline_parallel_schedule", schedule_name(p.schedule));
  t.integer("pipeline_parallel_microbatch_size", p.micro_batch,
            n(micro_batches(f)) + " micro-batches per step");
  std::string parts = "[\n";
  for (size_t v = 0; v < stage_layer_lists.size(); ++v) {
    std::vector<std::string> modules;
    if (v == 0) modules.emplace_back("tok_embeddings");
    for (const int64_t layer : stage_layer_lists[v]) modules.push_back("layers." + n(layer));
    if (v + 1 == stage_layer_lists.size()) modules.insert(modules.end(), {"norm", "output"});
    std::string line;
    for (const std::string& m : modules) line += (line.empty() ? "" : ", ") + Toml::quoted(m);
    parts += "  [" + line + "],\n";
  }
  t.raw("module_fqns_per_model_part", parts + "]");
}

void write_parallelism(Toml& t, const PlanFile& f,
                       const std::vector<std::vector<int64_t>>& stage_layer_lists) {
  const PlanSpec& p = f.plan;
  t.section("parallelism");
  // ZeRO-0: DDP over the data-parallel ranks; ZeRO-2/3: FSDP2 over them (and cp), keeping the
  // gathered parameters from forward to backward (ZeRO-2) or not (ZeRO-3; "default" keeps them
  // only with a pipeline, as the plan's ZeRO-3 inside a pipeline is costed).
  t.integer("data_parallel_replicate_degree", p.zero == 0 ? p.dp : 1);
  t.integer("data_parallel_shard_degree", p.zero == 0 ? 1 : p.dp);
  if (p.zero >= 2)
    t.string("fsdp_reshard_after_forward", p.zero == 2 ? "never" : "default",
             p.zero == 2 ? "ZeRO-2" : "ZeRO-3");
  t.integer("tensor_parallel_degree", p.tp,
            p.tp > 1 ? "sequence-parallel, as TorchTitan's TP always is" : "");
  t.integer("context_parallel_degree", p.cp);
  if (p.cp > 1) {
    t.string("context_parallel_load_balancer", "headtail",
             "rank i holds chunks i and 2 cp - 1 - i");
    t.string("context_parallel_rotate_method", "alltoall",
             "K and V passed round the ring, as the plan costs them");
  }
  write_pipeline(t, f, stage_layer_lists);
  t.integer("expert_parallel_degree", 1, "a dense model");
}

void write_features(Toml& t, const PlanFile& f, const LaunchOptions& o) {
  const PlanSpec& p = f.plan;
  t.section("activation_checkpoint");
  t.string("mode", p.recompute == Recompute::full        ? "full"
                   : p.recompute == Recompute::selective ? "selective"
                                                         : "none");
  if (p.recompute == Recompute::selective)
    t.string("selective_ac_option", "op", "op-level selective checkpointing");
  t.section("compile");
  t.boolean("enable", f.job.kernels == Kernels::fused,
            f.job.kernels == Kernels::fused ? "the plan's fused kernels"
                                            : "PyTorch eager, as the plan's kernels");
  t.raw("components", "[\"model\", \"loss\"]");
  if (f.job.dtype == Dtype::fp8) {
    // The output layer stays in 16 bits, as the stack's fp8 is costed (attention is bf16 anyway).
    if (f.job.fp8.scaling == Fp8Scaling::mxfp8) {
      t.section("quantize.linear.mx");
      t.string("recipe_name", "mxfp8_cublas");
    } else {
      t.section("quantize.linear.float8");
    }
    t.raw("filter_fqns", "[\"output\"]");
  }
  t.section("metrics");
  t.integer("log_freq", o.benchmark_iters > 0 ? 1 : 10);
  t.section("checkpoint");
  t.boolean("enable", false);
}

}  // namespace
}  // namespace torchtitan_export

std::string torchtitan_toml(const PlanFile& f, const LaunchOptions& o) {
  using namespace torchtitan_export;
  check_runs(f);
  const Flavor& flavor = llama3_flavor(f.model);
  const std::vector<std::vector<int64_t>> stage_layer_lists = virtual_stage_layers(f.model, f.plan);
  check_recompute(f.plan, stage_layer_lists);
  const int64_t steps = training_steps(f, o);
  Toml t;
  write_header(t, f, flavor, steps, o);
  write_job_model(t, f, flavor, o);
  write_schedule(t, steps);
  write_training(t, f, o, steps);
  write_parallelism(t, f, stage_layer_lists);
  write_features(t, f, o);
  return t.text();
}

namespace torchtitan_export {
namespace {

// torchrun as TorchTitan's run_train.sh runs it (c10d rendezvous, rank 0's output only, tagged),
// with PyTorch's expandable segments; `hosts` torchruns under srun when the plan spans hosts.
std::string torchrun_train(const PlanFile& f, const LaunchOptions& o) {
  const std::string per_host = n(launch_common::gpus_per_host_used(f));
  const std::string train =
      "    --local-ranks-filter 0 --role rank --tee 3 \\\n"
      "    -m torchtitan.train --job.config_file \"$CONFIG\"\n";
  std::string s =
      "cd \"$TORCHTITAN_DIR\"\nexport PYTORCH_ALLOC_CONF=\"expandable_segments:True\"\n";
  if (plan_hosts(f) == 1)
    return s + "torchrun --nnodes 1 --nproc-per-node " + per_host +
           " --rdzv-backend c10d --rdzv-endpoint localhost:0 \\\n" + train;
  return s +
         "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
         "MASTER_PORT=29500\n"
         "# One task per node; torchrun starts one process per GPU of its node.\n"
         "srun " +
         launch_common::srun_options(o) +
         " torchrun \\\n"
         "    --nnodes \"$SLURM_NNODES\" --nproc-per-node " +
         per_host +
         " \\\n"
         "    --rdzv-id \"$SLURM_JOB_ID\" --rdzv-backend c10d --rdzv-endpoint "
         "\"$MASTER_ADDR:$MASTER_PORT\" \\\n" +
         train;
}

}  // namespace
}  // namespace torchtitan_export

std::string torchtitan_script(const PlanFile& f, const LaunchOptions& o) {
  using namespace torchtitan_export;
  const std::string toml = torchtitan_toml(f, o);
  const bool slurm = plan_hosts(f) > 1;
  const std::string config =
      slurm ? "\"$SLURM_SUBMIT_DIR/" + o.job_name + "_torchtitan_$SLURM_JOB_ID.toml\""
            : "\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)/" + o.job_name +
                  "_torchtitan.toml\"";
  const PlanSpec& p = f.plan;
  return (slurm ? launch_common::sbatch_header(f, o, 1)
                : "#!/usr/bin/env bash\nset -euo pipefail\n") +
         "# " + f.model.name + " with TorchTitan: " + n(f.gpus) + " GPUs, dp " + n(p.dp) +
         " x cp " + n(p.cp) + " x tp " + n(p.tp) + " x pp " + n(p.pp) + ", ZeRO " + n(p.zero) +
         "\n"
         "# The job config below is written " +
         (slurm ? "to the submit directory" : "beside this script") +
         " and read by torchtitan.train from TORCHTITAN_DIR,\n"
         "# a checkout of TorchTitan v0.2.2 installed with its requirements (pip install -e .): "
         "its\n"
         "# relative paths (test data and tokenizer, outputs) are that checkout's.\n"
         "TORCHTITAN_DIR=${TORCHTITAN_DIR:-/opt/torchtitan}\n"
         "CONFIG=" +
         config +
         "\n"
         "cat > \"$CONFIG\" <<'TOML'\n" +
         toml + "TOML\n" + torchrun_train(f, o);
}

}  // namespace parallax
