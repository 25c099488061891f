#pragma once
// Megatron-Core's mixture-of-experts flags as `export --format megatron` writes them (the
// importer, inputs/src/megatron_moe_flags.hpp, reads them back).
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax::megatron_moe {

// Appends the MoE flags of model m under plan p (nothing for a dense model).
void add_flags(std::vector<std::string>& a, const ModelSpec& m, const PlanSpec& p);

}  // namespace parallax::megatron_moe
