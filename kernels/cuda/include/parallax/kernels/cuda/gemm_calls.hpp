#pragma once
// The GEMM calls of the CUDA backend's linear layers, as data: linear_plan.hpp's plans run with a
// recording GEMM (and bias kernels that do nothing) on placeholder pointers that nothing
// dereferences, so the record is the executor's own sequence, not a copy of it. Calibration times
// these very calls (calibration/layer_gemm_calls.hpp); the tests compare them with calls derived
// by hand. Pure C++: no CUDA headers.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "parallax/kernels/cuda/gemm_args.hpp"
#include "parallax/kernels/cuda/linear_plan.hpp"

namespace parallax::kernels::cuda {

// forward: out = inp W^T; dgrad: dinp += dout W; wgrad: dW += dout^T inp.
enum class GemmRole { forward, dgrad, wgrad };

inline const char* to_string(GemmRole r) {
  switch (r) {
    case GemmRole::forward: return "forward";
    case GemmRole::dgrad: return "dgrad";
    case GemmRole::wgrad: return "wgrad";
  }
  return "?";
}

inline int64_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

// One call of the gemm callable of linear_plan.hpp: row-major C = alpha op(A) op(B) + beta C.
struct GemmCall {
  GemmRole role = GemmRole::forward;
  RowMajorGemm gemm;
  float alpha = 1.0f, beta = 0.0f;
  DType a_type = DType::bf16, b_type = DType::bf16, c_type = DType::bf16;
  bool operator==(const GemmCall&) const = default;
};

// Bytes each operand of `c` spans from its base pointer (all `batch` matrices): A stored (M, K),
// or (K, M) when trans_a, with row length lda; B (K, N) or (N, K); C (M, N).
struct GemmCallBytes {
  int64_t a = 0, b = 0, c = 0;
};

inline GemmCallBytes gemm_call_bytes(const GemmCall& c) {
  const RowMajorGemm& g = c.gemm;
  const int64_t more = g.batch - 1;
  const int64_t a_rows = g.trans_a ? g.K : g.M, b_rows = g.trans_b ? g.N : g.K;
  return {(more * g.stride_a + a_rows * g.lda) * dtype_bytes(c.a_type),
          (more * g.stride_b + b_rows * g.ldb) * dtype_bytes(c.b_type),
          (more * g.stride_c + g.M * g.ldc) * dtype_bytes(c.c_type)};
}

// The GEMMs of one linear layer out (N, OC) = inp (N, C) W^T [+ b] as the executor issues them
// (src/linear.cpp: matmul_forward, then matmul_backward with every gradient wanted): in order,
// each with its role, read off the output it writes.
inline std::vector<GemmCall> linear_gemm_calls(int64_t N, int64_t C, int64_t OC) {
  // Placeholders: distinct addresses standing for the tensors (bf16 ones as uint16_t), never read.
  struct Tensors {
    uint16_t out, inp, weight, bias, dinp, dout;
    float dweight, dbias;
  } t{};
  std::vector<GemmCall> calls;
  auto record = [&](const RowMajorGemm& g, float alpha, const void*, DType at, const void*,
                    DType bt, float beta, void* out, DType ct) {
    GemmRole role = GemmRole::forward;
    if (out == &t.dinp)
      role = GemmRole::dgrad;
    else if (out == &t.dweight)
      role = GemmRole::wgrad;
    else if (out != &t.out)
      throw std::logic_error("linear_gemm_calls: a GEMM writes none of the layer's outputs");
    calls.push_back({role, g, alpha, beta, at, bt, ct});
  };
  matmul_forward_plan(record, [](auto&&...) {}, &t.out, &t.inp, &t.weight, &t.bias, N, C, OC);
  matmul_backward_plan(record, [](auto&&...) {}, &t.dinp, &t.dweight, &t.dbias, &t.dout, &t.inp,
                       &t.weight, N, C, OC);
  return calls;
}

}  // namespace parallax::kernels::cuda
