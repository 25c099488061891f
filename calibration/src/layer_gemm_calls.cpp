#include "parallax/calibration/layer_gemm_calls.hpp"

#include "parallax/calibration/linear_shapes.hpp"

namespace parallax::calib {

std::vector<LayerGemmCall> layer_gemm_calls(const ModelSpec& m, int64_t tp, int64_t micro_batch) {
  std::vector<LayerGemmCall> out;
  for (const LinearShape& l : layer_linear_shapes(m, tp, micro_batch))
    for (const kernels::cuda::GemmCall& c : kernels::cuda::linear_gemm_calls(l.m, l.k, l.n))
      out.push_back({l.name, c});
  return out;
}

}  // namespace parallax::calib
