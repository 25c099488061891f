#include "parallax/export/megatron_deepspeed.hpp"

#include <cmath>

#include "launch_args.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {
namespace {

[[noreturn]] void refuse_megatron_deepspeed(const std::string& why) {
  throw InputError("export", "--format megatron-deepspeed", why);
}

using launch_args::add;
using launch_args::add_job_flags;
using launch_args::add_model_flags;
using launch_args::add_plan_flags;

// The plans microsoft/Megatron-DeepSpeed cannot run, refused with the reason.
void refuse_what_it_cannot_run(const PlanFile& f) {
  const ModelSpec& m = f.model;
  const PlanSpec& p = f.plan;
  if (p.cp > 1)
    refuse_megatron_deepspeed("Megatron-DeepSpeed has no context parallelism (cp " + std::to_string(p.cp) +
           "): its sequence parallelism is DeepSpeed-Ulysses (--ds-sequence-parallel-size), an "
           "all-to-all of attention heads, not a ring of key/value chunks");
  if (p.schedule == Schedule::interleaved) refuse_megatron_deepspeed("DeepSpeed's pipeline engine has no interleaved schedule");
  if (p.schedule == Schedule::gpipe) refuse_megatron_deepspeed("DeepSpeed's pipeline engine runs 1F1B, not GPipe");
  if (f.job.dtype == Dtype::fp8) refuse_megatron_deepspeed("Megatron-DeepSpeed has no fp8 training path");
  // megatron/arguments.py has no --position-embedding-type: ALiBi is BigScience's fork's, whose
  // arguments differ (bigscience-workshop/Megatron-DeepSpeed trained BLOOM).
  if (m.position == Position::alibi)
    refuse_megatron_deepspeed("microsoft/Megatron-DeepSpeed has no ALiBi argument (BLOOM's trainer was BigScience's fork, "
           "whose arguments Parallax does not write)");
  // gpt_model.py (GPTModelPipe): the pipeline recomputes every layer ("uniform") or none - "deepspeed's
  // pipeline doesn't support the block recompute method".
  if (p.recompute == Recompute::full && p.recompute_layers > 0 && p.pp > 1)
    refuse_megatron_deepspeed("DeepSpeed's pipeline recomputes every layer or none (recompute_layers " +
           std::to_string(p.recompute_layers) + " with pp " + std::to_string(p.pp) + ")");
}

}  // namespace

std::vector<std::string> megatron_deepspeed_args(const PlanFile& f, const MegatronData& data,
                                                 const std::string& ds_config) {
  const ModelSpec& m = f.model;
  const PlanSpec& p = f.plan;
  refuse_what_it_cannot_run(f);
  validate_plan(m, f.cluster, f.job, p, f.gpus, "export");
  std::vector<std::string> a;
  add_plan_flags(a, p, {"tp", "pp"});  // Megatron-LM's spellings (plan_fields.hpp)
  // Without pipelining, run the model as a plain module (ZeRO-2/3 need it: DeepSpeed's
  // PipelineModule refuses them).
  if (p.pp == 1) a.push_back("--no-pipeline-parallel");
  add_plan_flags(a, p, {"sequence_parallel"});
  add_model_flags(a, m, {&ModelSpec::layers, &ModelSpec::hidden, &ModelSpec::ffn_hidden, &ModelSpec::heads});
  if (m.kv_heads != m.heads) add(a, "--num-key-value-heads", m.kv_heads);
  // megatron/arguments.py: kv_channels defaults to hidden_size // num_attention_heads.
  if (m.decoupled_head_dim()) add_model_flags(a, m, {&ModelSpec::kv_channels});
  add_model_flags(a, m, {&ModelSpec::seq_len});
  add(a, "--max-position-embeddings", m.seq_len);
  add_plan_flags(a, p, {"micro_batch"});
  add_job_flags(a, f.job, {"global_batch"});
  if (m.position == Position::rope) {
    // megatron/arguments.py: --rotary-position-embeddings-theta (an integer, default 10000) is
    // RotaryEmbedding's theta; there is no Llama 3.1 frequency scaling.
    if (m.rope_base != std::floor(m.rope_base) || m.rope_base > 2147483647.0)
      refuse_megatron_deepspeed("Megatron-DeepSpeed's --rotary-position-embeddings-theta is an integer; the model's rope_base is " +
             std::to_string(m.rope_base));
    if (m.has_rope_scaling())
      refuse_megatron_deepspeed("Megatron-DeepSpeed's RoPE has no Llama 3.1 frequency scaling (megatron/model/rotary_pos_embedding.py "
             "takes theta only); the model has rope_scaling factor " + std::to_string(m.rope_scaling.factor));
    a.push_back("--use-rotary-position-embeddings");
    add(a, "--rotary-position-embeddings-theta", static_cast<int64_t>(m.rope_base));
  }
  if (m.activation == Activation::swiglu) a.push_back("--swiglu");
  if (m.norm == Norm::rmsnorm) a.insert(a.end(), {"--normalization", "rmsnorm"});
  if (!m.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) a.push_back("--disable-bias-linear");
  launch_args::add_dropout(a, m);
  if (p.recompute == Recompute::full) {
    // --deepspeed-activation-checkpointing takes megatron/model/transformer.py's DeepSpeed path,
    // which checkpoints every --checkpoint-num-layers layers and ignores block: the first K
    // layers only run through Megatron's own checkpointing (block, without the flag).
    if (p.recompute_layers > 0) {
      a.insert(a.end(), {"--recompute-granularity", "full", "--recompute-method", "block"});
      add(a, "--recompute-num-layers", p.recompute_layers);
    } else {
      a.insert(a.end(), {"--deepspeed-activation-checkpointing", "--recompute-granularity", "full",
                         "--recompute-method", "uniform"});
      // DeepSpeed's checkpointing takes partition_activations from the command line over the
      // config (runtime/activation_checkpointing/checkpointing.py, configure): say it.
      if (p.sequence_parallel) a.push_back("--partition-activations");
    }
  } else if (p.recompute == Recompute::selective) {
    a.insert(a.end(), {"--recompute-granularity", "selective"});
  }
  if (f.job.dtype == Dtype::bf16) a.push_back("--bf16");
  if (f.job.dtype == Dtype::fp16) a.push_back("--fp16");
  a.insert(a.end(), {"--deepspeed", "--deepspeed_config", ds_config});
  add(a, "--zero-stage", p.zero);
  // Data and tokenizer: loud placeholders when not given (the shell stops on them).
  a.insert(a.end(), {"--data-path", data.data_path.empty() ? "\"${DATA_PATH:?set DATA_PATH to a data prefix}\""
                                                           : data.data_path,
                     "--split", "949,50,1", "--tokenizer-type", "HFTokenizer", "--tokenizer-model",
                     data.tokenizer_model.empty() ? "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL to the tokenizer of the data}\""
                                                  : data.tokenizer_model});
  a.insert(a.end(), {"--optimizer", "adam"});
  launch_args::add_schedule(a, f, data.benchmark_iters);
  return a;
}

}  // namespace parallax
