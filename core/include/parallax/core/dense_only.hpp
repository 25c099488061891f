#pragma once
// Issue 27 is built one layer at a time: the cost model, planner, simulator and Megatron export
// know experts, and stacks without an MoE layer refuse them through their capability table
// (stack_refusal). Calibration has no MoE model yet: calibrate's --model list, calibration
// samples and a checkpoint's recorded model call this, so an MoE model is refused with one line
// instead of being fitted or resumed as if it were dense.
#include <string>

#include "parallax/core/model_spec.hpp"

namespace parallax {

// Throws InputError(source, path, ...) for an MoE model; does nothing for a dense one. `path`
// names where the model's num_experts was given ("$.model.moe.num_experts", "--model").
void refuse_moe(const ModelSpec& m, const std::string& source, const std::string& path);

}  // namespace parallax
