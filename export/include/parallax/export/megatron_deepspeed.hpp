#pragma once
// Megatron-DeepSpeed's arguments for a plan (microsoft/Megatron-DeepSpeed megatron/arguments.py,
// main of 2024-12, as its examples_deepspeed/pretrain_llama2_distributed.sh writes them), for
// BLOOM-style users: Megatron's tensor parallelism under DeepSpeed's pipeline engine and ZeRO,
// configured by a DeepSpeed config file (deepspeed.hpp) the script writes beside them.
#include <string>
#include <vector>

#include "parallax/core/plan_file.hpp"
#include "parallax/export/megatron.hpp"

namespace parallax {

// `ds_config` is the path of the DeepSpeed config the arguments name. Data: --data-path when
// given, else "${DATA_PATH:?...}" (Megatron-DeepSpeed has no mock dataset), and the Hugging
// Face tokenizer or "${TOKENIZER_MODEL:?...}". Throws InputError("export", "--format
// megatron-deepspeed", reason) for what its pipeline engine cannot run (interleaving, GPipe),
// fp8, and what the plan's stack cannot run (validate_plan).
std::vector<std::string> megatron_deepspeed_args(const PlanFile& f, const MegatronData& data,
                                                 const std::string& ds_config);

}  // namespace parallax
