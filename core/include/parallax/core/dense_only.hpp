#pragma once
// Issue 27 is built one layer at a time: the model spec describes a mixture of experts, but the
// cost model, planner, simulator, exports, executor and calibration have none yet. Each command
// that would reach them calls this once, early (validate_plan for every plan, resolve_job for the
// plan flags, calibrate for its --model list), so an MoE model is refused with one line instead of
// being costed, simulated or run as if it were dense.
#include <string>

#include "parallax/core/model_spec.hpp"

namespace parallax {

// Throws InputError(source, path, ...) for an MoE model; does nothing for a dense one. `path`
// names where the model's num_experts was given ("$.model.moe.num_experts", "--model").
void refuse_moe(const ModelSpec& m, const std::string& source, const std::string& path);

// Who reads a plan: every command but `run` refuses an MoE model (refuse_moe); the executor runs
// one (issue 27's executor slice) and checks what it can run itself (executor/src/run.cpp).
enum class MoeReader { dense_only, executor };

}  // namespace parallax
