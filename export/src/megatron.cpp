#include "parallax/export/megatron.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/core/megatron_conventions.hpp"
#include "parallax/core/spec_json.hpp"
#include "launch_args.hpp"
#include "megatron_moe.hpp"

namespace parallax {
namespace {

using launch_args::add;
using launch_args::add_job_flags;
using launch_args::add_model_flags;
using launch_args::number_text;

[[noreturn]] void refuse(const std::string& why) {
  throw InputError("export", "--format megatron", why);
}

// --rotary-base and, for Llama 3.1's scaling, --use-rope-scaling with its factor (the other three
// numbers are Megatron-LM's fixed ones, megatron_conventions.hpp).
void add_rope(std::vector<std::string>& a, const ModelSpec& m) {
  if (m.rope_base != std::floor(m.rope_base))
    refuse("Megatron-LM's --rotary-base is an integer; the model's rope_base is " + number_text(m.rope_base));
  add(a, "--rotary-base", static_cast<int64_t>(m.rope_base));
  if (!m.has_rope_scaling()) return;
  const RopeScaling& r = m.rope_scaling;
  if (r.low_freq_factor != megatron::kRopeLowFreq || r.high_freq_factor != megatron::kRopeHighFreq ||
      r.original_max_position != megatron::kRopeOriginalMax)
    refuse("Megatron-LM's --use-rope-scaling fixes low_freq_factor 1, high_freq_factor 4 and original_max_position "
           "8192 (Llama 3.1's); the model's rope_scaling has " + number_text(r.low_freq_factor) + ", " +
           number_text(r.high_freq_factor) + " and " + std::to_string(r.original_max_position));
  a.insert(a.end(), {"--use-rope-scaling", "--rope-scaling-factor", number_text(r.factor)});
}

// What Megatron-LM cannot run of the plan: GPipe, ALiBi, unequal virtual stages, and what the
// plan's stack cannot run, as the planner refuses it (its capability table).
void check_runs(const PlanFile& f, int64_t split_layers) {
  const ModelSpec& m = f.model;
  const PlanSpec& p = f.plan;
  if (p.schedule == Schedule::gpipe) refuse("Megatron-LM runs 1F1B, not GPipe");
  if (m.position == Position::alibi) refuse("Megatron-LM has no ALiBi position embedding");
  if (p.vpp > 1 && (p.first_stage_layers > 0 || p.last_stage_layers > 0 || split_layers % (p.pp * p.vpp) != 0))
    refuse("Megatron-LM's virtual pipeline stages hold equal layers (" + std::to_string(split_layers) +
           (split_layers != m.layers ? " layers with the embedding or loss counted" : " layers") +
           " over pp " + std::to_string(p.pp) + " x vpp " + std::to_string(p.vpp) + ")");
  validate_plan(m, f.cluster, f.job, p, f.gpus, "export");
}

// The parallel sizes, the pipeline's cut and the batch.
void add_parallel_flags(std::vector<std::string>& a, const PlanFile& f, int64_t split_layers) {
  const PlanSpec& p = f.plan;
  launch_args::PlanFlags flags(a, p);
  flags.add({"tp", "pp", "cp"});
  // The stack's ring, where its arguments name one (Megatron-Core's --cp-comm-type).
  if (p.cp > 1 && !f.job.capabilities.cp_comm_type.empty()) {
    a.push_back("--cp-comm-type");
    a.push_back(f.job.capabilities.cp_comm_type);
  }
  flags.add({"first_stage_layers", "last_stage_layers", "account_for_embedding_in_pipeline_split",
             "account_for_loss_in_pipeline_split"});
  if (p.vpp > 1) add(a, "--num-layers-per-virtual-pipeline-stage", split_layers / (p.pp * p.vpp));
  if (p.microbatch_group != 0 && p.microbatch_group != p.pp)
    add(a, "--microbatch-group-size-per-virtual-pipeline-stage", p.microbatch_group);
  flags.add({"sequence_parallel", "micro_batch"});
  flags.rest();
  add_job_flags(a, f.job, {"global_batch"});
}

void add_recompute(std::vector<std::string>& a, const PlanSpec& p) {
  if (p.recompute == Recompute::selective) {
    a.insert(a.end(), {"--recompute-granularity", "selective"});
  } else if (p.recompute == Recompute::full) {
    a.insert(a.end(), {"--recompute-granularity", "full"});
    // Every layer of a stage: checkpoint each layer's input ("uniform", one layer per chunk);
    // only the first K layers of each stage: "block" with K. Megatron counts K in each model
    // chunk (core/transformer/transformer_block.py, num_layers_per_pipeline_rank =
    // len(self.layers)), so with vpp chunks per stage it is K / vpp per chunk.
    if (p.recompute_layers > 0) {
      if (p.recompute_layers % p.vpp != 0)
        refuse("Megatron-LM's --recompute-num-layers counts the layers of each of the stage's " +
               std::to_string(p.vpp) + " virtual stages: recompute_layers (" +
               std::to_string(p.recompute_layers) + ") must be divisible by vpp");
      a.insert(a.end(), {"--recompute-method", "block"});
      add(a, "--recompute-num-layers", p.recompute_layers / p.vpp);
    } else {
      a.insert(a.end(), {"--recompute-method", "uniform"});
      add(a, "--recompute-num-layers", 1);
    }
  }
}

// The stack the plan was predicted for: its attention, its data-parallel sharding, its overlaps.
void add_stack_flags(std::vector<std::string>& a, const PlanFile& f) {
  const PlanSpec& p = f.plan;
  // The attention the plan was predicted with: Megatron-Core picks a fused kernel by default
  // (--attention-backend auto, megatron/core/transformer/enums.py AttnBackend), so a stack that ran
  // the unfused softmax(QK^T)V of Megatron-LM 2021-2022 says so.
  if (f.job.attention == Attention::unfused) a.insert(a.end(), {"--attention-backend", "unfused"});
  // Megatron FSDP (v1, the default) turns the distributed optimizer on itself, and v2 refuses the
  // flag (megatron/training/arguments.py, the --use-megatron-fsdp checks): said only for ZeRO-1.
  if (p.zero == 1) a.push_back("--use-distributed-optimizer");
  // The overlaps of the stack the plan was predicted for, where Megatron-LM has a flag
  // (megatron/training/arguments.py): the gradient reduce-scatter under backward; the parameter
  // all-gather under forward, which needs the first and the distributed optimizer; TP
  // communication under GEMMs (Transformer Engine userbuffers), which needs sequence parallelism.
  // Megatron overlaps p2p with the interleaved schedule by default; a stack that does not is
  // said so, which validate_args allows only above pp 2 (on pp 2 the launch overlaps it).
  const StackOverlap& ov = f.job.overlap;
  const bool grad_reduce = ov.grad_reduce && p.dp > 1;
  if (grad_reduce) a.push_back("--overlap-grad-reduce");
  if (grad_reduce && ov.param_gather && p.zero >= 1) a.push_back("--overlap-param-gather");
  if (ov.tp_comm && p.tp > 1 && p.sequence_parallel) a.push_back("--tp-comm-overlap");
  if (!ov.p2p && p.vpp > 1 && p.pp > 2) a.push_back("--no-overlap-p2p-communication");
  if (p.zero >= 2) {
    // Megatron FSDP (megatron/training/arguments.py): optim_grads shards gradients too (ZeRO-2),
    // optim_grads_params parameters as well (ZeRO-3); it checkpoints only as fsdp_dtensor.
    a.insert(a.end(), {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
                       p.zero == 2 ? "optim_grads" : "optim_grads_params", "--ckpt-format",
                       "fsdp_dtensor"});
  }
}

// The model's shape, positions, norm, biases, dropout and experts.
void add_model(std::vector<std::string>& a, const ModelSpec& m, const PlanSpec& p) {
  add_model_flags(a, m, {&ModelSpec::layers, &ModelSpec::hidden, &ModelSpec::heads});
  if (m.kv_heads != m.heads) {
    a.push_back("--group-query-attention");
    add_model_flags(a, m, {&ModelSpec::kv_heads});
  }
  // Megatron-LM's kv_channels defaults to hidden_size / num_attention_heads.
  if (m.decoupled_head_dim()) add_model_flags(a, m, {&ModelSpec::kv_channels});
  add_model_flags(a, m, {&ModelSpec::seq_len});
  add(a, "--max-position-embeddings", m.seq_len);
  add_model_flags(a, m, {&ModelSpec::ffn_hidden, &ModelSpec::vocab});
  if (m.activation == Activation::swiglu) a.push_back("--swiglu");
  a.insert(a.end(), {"--position-embedding-type",
                     m.position == Position::rope ? "rope" : "learned_absolute"});
  if (m.position == Position::rope) add_rope(a, m);
  a.insert(a.end(), {"--normalization", m.norm == Norm::rmsnorm ? "RMSNorm" : "LayerNorm"});
  if (!m.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) a.push_back("--disable-bias-linear");
  launch_args::add_dropout(a, m);
  megatron_moe::add_flags(a, m, p);
}

void add_precision(std::vector<std::string>& a, const JobSpec& j) {
  // fp8 through Transformer Engine: bf16 outside the fp8 GEMMs, E4M3 forward and E5M2 gradients
  // (hybrid), the stack's scaling (delayed amax history, the current tensor's: tensorwise, or
  // per 32-element block: mxfp8).
  if (j.dtype == Dtype::bf16 || j.dtype == Dtype::fp8) a.push_back("--bf16");
  if (j.dtype == Dtype::fp8)
    a.insert(a.end(), {"--fp8-format", "hybrid", "--fp8-recipe", megatron::fp8_recipe(j.fp8.scaling)});
  if (j.dtype == Dtype::fp16) a.push_back("--fp16");
}

void add_data(std::vector<std::string>& a, const MegatronData& data) {
  // Data and tokenizer: Megatron-LM asserts a single data source (--mock-data or --data-path).
  if (data.data_path.empty()) {
    a.insert(a.end(), {"--mock-data", "--tokenizer-type", "NullTokenizer"});
  } else {
    if (data.tokenizer_model.empty())
      throw InputError("export", "--tokenizer", "is needed with --data: the tokenizer the data was made with");
    a.insert(a.end(), {"--data-path", data.data_path, "--split", "949,50,1", "--tokenizer-type",
                       "HuggingFaceTokenizer", "--tokenizer-model", data.tokenizer_model});
  }
}

}  // namespace

std::vector<std::string> megatron_args(const PlanFile& f, const MegatronData& data) {
  // The layers Megatron-LM divides over the (virtual) stages: the embedding and the loss count when
  // the plan says so (megatron/training/arguments.py).
  const int64_t split_layers = f.model.layers + f.plan.embedding_in_split + f.plan.loss_in_split;
  check_runs(f, split_layers);
  std::vector<std::string> a;
  add_parallel_flags(a, f, split_layers);
  add_recompute(a, f.plan);
  add_stack_flags(a, f);
  add_model(a, f.model, f.plan);
  add_precision(a, f.job);
  add_data(a, data);
  launch_args::add_schedule(a, f, data.benchmark_iters);
  // A benchmark's log says the throughput per GPU too (training_log: "throughput per GPU").
  if (data.benchmark_iters > 0) a.push_back("--log-throughput");
  return a;
}

std::string megatron_args_text(const PlanFile& f, const MegatronData& data) {
  return args_text(megatron_args(f, data));
}

std::string args_text(const std::vector<std::string>& a) {
  std::string out;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool flag = a[i].rfind("--", 0) == 0;
    if (flag && i > 0) out += " \\\n";
    out += (flag ? "" : " ") + a[i];
  }
  return out + "\n";
}

}  // namespace parallax
