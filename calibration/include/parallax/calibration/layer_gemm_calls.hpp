#pragma once
// The GEMM calls the CUDA backend makes for one micro-batch through one transformer layer and
// the LM head on one tensor-parallel rank: the linear-layer shapes (linear_shapes.hpp) through
// the executor's own plans (kernels/cuda/gemm_calls.hpp), transposes, leading dimensions, dtypes,
// alpha and beta included. What the CUDA GEMM sweep times (cuda_sweeps.hpp gemm_sweep). Host
// code: no CUDA needed.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/kernels/cuda/gemm_calls.hpp"

namespace parallax::calib {

struct LayerGemmCall {
  std::string layer;  // qkv, proj, fc, fc_proj, head (linear_shapes.hpp)
  kernels::cuda::GemmCall call;
  std::string name() const { return layer + " " + kernels::cuda::to_string(call.role); }
};

// Per linear shape, in linear_shapes.hpp's order, the executor's forward, dgrad and wgrad calls.
std::vector<LayerGemmCall> layer_gemm_calls(const ModelSpec& m, int64_t tp, int64_t micro_batch);

}  // namespace parallax::calib
