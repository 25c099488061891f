#pragma once
// A DeepSpeed config for a plan: train_batch_size = train_micro_batch_size_per_gpu x
// gradient_accumulation_steps x dp, ZeRO stage, precision. Pipeline and tensor parallel sizes are
// set in the training script (PipelineModule, Megatron-DeepSpeed arguments), not in this file.
#include <nlohmann/json.hpp>

#include "parallax/core/plan_file.hpp"

namespace parallax {

// Throws InputError("export", "--format", reason) for ZeRO-2/3 with pp > 1, interleaved or GPipe
// schedules (DeepSpeed's pipeline engine runs its own 1F1B schedule).
nlohmann::json deepspeed_config(const PlanFile& f);

}  // namespace parallax
