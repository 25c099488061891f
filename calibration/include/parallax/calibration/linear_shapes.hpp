#pragma once
// The GEMMs of one micro-batch through one transformer layer and the LM head on one
// tensor-parallel rank, as the executor runs them (executor/src/layers/chunk_impl.hpp): what the
// microbenchmarks of both backends time, so that a profile covers the plans' shapes.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"

namespace parallax::calib {

// Forward shape of a linear layer: out (m, n) = inp (m, k) W^T, W stored (n, k); m = tokens.
struct LinearShape {
  std::string name;  // qkv, proj, fc, fc_proj, head
  int64_t m = 0, n = 0, k = 0;
};

// qkv (N, 3C/tp, C), proj (N, C, C/tp), fc (N, F/tp or 2F/tp for SwiGLU, C), fc_proj
// (N, C, F/tp), head (N, padded vocab / tp, C), with N = micro_batch * seq_len tokens.
std::vector<LinearShape> layer_linear_shapes(const ModelSpec& m, int64_t tp, int64_t micro_batch);

}  // namespace parallax::calib
