// Linear layers and causal attention: linear_plan.hpp's GEMM sequences run with cuBLAS and the
// bias and softmax kernels. Host code only: compiled by the C++ compiler, not nvcc.
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::kernels::cuda {

namespace {

auto gemm_of(const Blas& blas) {
  return [&blas](const RowMajorGemm& g, float alpha, const void* A, DType at, const void* B,
                 DType bt, float beta, void* C, DType ct) { blas.gemm(g, alpha, A, at, B, bt, beta, C, ct); };
}

struct AttentionWorkspace {
  float* scores;  // (B, NH, T, T) fp32: pre-softmax scores, then their gradients
  bf16* dpre;     // (B, NH, T, T) bf16: gradients of the scaled scores
};

AttentionWorkspace carve(void* ws, int64_t B, int64_t T, int64_t NH) {
  auto* scores = static_cast<float*>(ws);
  return {scores, reinterpret_cast<bf16*>(scores + B * NH * T * T)};
}

}  // namespace

void matmul_forward(const Blas& blas, bf16* out, const bf16* inp, const bf16* weight,
                    const bf16* bias, int64_t N, int64_t C, int64_t OC) {
  matmul_forward_plan(
      gemm_of(blas),
      [&](bf16* o, const bf16* b, int64_t n, int64_t c) { bias_forward(o, b, n, c, blas.stream()); },
      out, inp, weight, bias, N, C, OC);
}

void matmul_backward(const Blas& blas, bf16* dinp, float* dweight, float* dbias,
                     const bf16* dout, const bf16* inp, const bf16* weight, int64_t N,
                     int64_t C, int64_t OC) {
  matmul_backward_plan(
      gemm_of(blas),
      [&](float* db, const bf16* d, int64_t n, int64_t c) { bias_backward(db, d, n, c, blas.stream()); },
      dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t NH) {
  const auto scores = static_cast<size_t>(B * NH * T * T);
  return scores * (sizeof(float) + sizeof(bf16));
}

void attention_forward(const Blas& blas, bf16* out, bf16* att, const bf16* qkv, void* workspace,
                       int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const AttentionWorkspace w = carve(workspace, B, T, NH);
  attention_forward_plan(
      gemm_of(blas),
      [&](bf16* a, const float* s, int64_t rows, int64_t t) { causal_softmax_forward(a, s, rows, t, blas.stream()); },
      out, att, qkv, w.scores, B, T, C, NH, KVH);
}

void attention_backward(const Blas& blas, bf16* dqkv, const bf16* dout, const bf16* qkv,
                        const bf16* att, void* workspace, int64_t B, int64_t T, int64_t C,
                        int64_t NH, int64_t KVH) {
  const AttentionWorkspace w = carve(workspace, B, T, NH);
  attention_backward_plan(
      gemm_of(blas),
      [&](bf16* dp, const bf16* a, const float* da, float scale, int64_t rows, int64_t t) {
        causal_softmax_backward(dp, a, da, scale, rows, t, blas.stream());
      },
      dqkv, dout, qkv, att, w.scores, w.dpre, B, T, C, NH, KVH);
}

}  // namespace parallax::kernels::cuda
