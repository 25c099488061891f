#include "parallax/export/deepspeed.hpp"

#include "parallax/core/error.hpp"
#include "parallax/core/plan_fields.hpp"

namespace parallax {

nlohmann::json deepspeed_config(const PlanFile& f) {
  const PlanSpec& p = f.plan;
  auto refuse = [](const std::string& why) {
    throw InputError("export", "--format deepspeed", why);
  };
  if (p.zero >= 2 && p.pp > 1) {
    refuse("DeepSpeed does not run ZeRO-2/3 with pipeline parallelism (zero " +
           std::to_string(p.zero) + ", pp " + std::to_string(p.pp) + ")");
  }
  if (p.cp > 1)
    refuse("DeepSpeed has no context parallelism (cp " + std::to_string(p.cp) +
           "): its sequence parallelism is DeepSpeed-Ulysses, an all-to-all of attention heads, not a "
           "ring of key/value chunks");
  if (p.schedule == Schedule::interleaved) refuse("DeepSpeed's pipeline engine has no interleaved schedule");
  if (p.schedule == Schedule::gpipe) refuse("DeepSpeed's pipeline engine runs 1F1B, not GPipe");
  nlohmann::json j;
  j["train_batch_size"] = p.micro_batch * p.num_micro_batches * p.dp;
  // The plan's fields a DeepSpeed config holds one to one (plan_fields.hpp): the micro-batch,
  // the gradient accumulation steps and the ZeRO stage.
  for (const PlanField& field : plan_fields())
    if (field.deepspeed_key != nullptr) j[nlohmann::json::json_pointer(field.deepspeed_key)] = p.*field.integer;
  j["bf16"] = {{"enabled", f.job.dtype == Dtype::bf16}};
  j["fp16"] = {{"enabled", f.job.dtype == Dtype::fp16}};
  // With bf16 DeepSpeed accumulates gradients in bf16 unless told (data_types.grad_accum_dtype);
  // the plan's memory counted fp32 gradients (18 bytes per parameter), so say fp32.
  if (f.job.dtype == Dtype::bf16 && f.job.bytes_per_param != ParamBytesConvention::b16)
    j["data_types"] = {{"grad_accum_dtype", "fp32"}};
  j["gradient_clipping"] = 1.0;
  j["steps_per_print"] = 10;
  if (p.recompute != Recompute::none) {
    j["activation_checkpointing"] = {{"partition_activations", p.sequence_parallel},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  }
  return j;
}

}  // namespace parallax
