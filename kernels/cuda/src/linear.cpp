// Linear layers and causal attention through cuBLAS (blas.hpp) plus the bias and softmax
// kernels. Host code only: compiled by the C++ compiler, not nvcc.
#include "parallax/kernels/cuda/ops.hpp"

#include <cmath>

namespace parallax::kernels::cuda {

void matmul_forward(const Blas& blas, bf16* out, const bf16* inp, const bf16* weight,
                    const bf16* bias, int64_t N, int64_t C, int64_t OC) {
  blas.gemm(gemm_linear_forward(N, C, OC), 1.0f, inp, DType::bf16, weight, DType::bf16, 0.0f, out,
            DType::bf16);
  if (bias) bias_forward(out, bias, N, OC, blas.stream());
}

void matmul_backward(const Blas& blas, bf16* dinp, float* dweight, float* dbias,
                     const bf16* dout, const bf16* inp, const bf16* weight, int64_t N,
                     int64_t C, int64_t OC) {
  if (dinp)
    blas.gemm(gemm_linear_dinp(N, C, OC), 1.0f, dout, DType::bf16, weight, DType::bf16, 1.0f,
              dinp, DType::bf16);
  blas.gemm(gemm_linear_dweight(N, C, OC), 1.0f, dout, DType::bf16, inp, DType::bf16, 1.0f,
            dweight, DType::f32);
  if (dbias) bias_backward(dbias, dout, N, OC, blas.stream());
}

size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t NH) {
  const auto scores = static_cast<size_t>(B * NH * T * T);
  return scores * (sizeof(float) + sizeof(bf16));
}

namespace {
struct AttentionWorkspace {
  float* scores;  // (B, NH, T, T) fp32: pre-softmax scores, then their gradients
  bf16* dpre;     // (B, NH, T, T) bf16: gradients of the scaled scores
};
AttentionWorkspace carve(void* ws, int64_t B, int64_t T, int64_t NH) {
  auto* scores = static_cast<float*>(ws);
  return {scores, reinterpret_cast<bf16*>(scores + B * NH * T * T)};
}
}  // namespace

void attention_forward(const Blas& blas, bf16* out, bf16* att, const bf16* qkv, void* workspace,
                       int64_t B, int64_t T, int64_t C, int64_t NH) {
  const AttentionWorkspace w = carve(workspace, B, T, NH);
  const float scale = 1.0f / std::sqrt(static_cast<float>(C / NH));
  const int64_t C3 = 3 * C, TT = T * T;
  // One strided-batched GEMM per batch element over its heads (q, k, v heads are hs apart).
  for (int64_t b = 0; b < B; ++b)
    blas.gemm(gemm_attention_scores(T, C, NH), scale, qkv + b * T * C3, DType::bf16,
              qkv + b * T * C3 + C, DType::bf16, 0.0f, w.scores + b * NH * TT, DType::f32);
  causal_softmax_forward(att, w.scores, B * NH * T, T, blas.stream());
  for (int64_t b = 0; b < B; ++b)
    blas.gemm(gemm_attention_values(T, C, NH), 1.0f, att + b * NH * TT, DType::bf16,
              qkv + b * T * C3 + 2 * C, DType::bf16, 0.0f, out + b * T * C, DType::bf16);
}

void attention_backward(const Blas& blas, bf16* dqkv, const bf16* dout, const bf16* qkv,
                        const bf16* att, void* workspace, int64_t B, int64_t T, int64_t C,
                        int64_t NH) {
  const AttentionWorkspace w = carve(workspace, B, T, NH);
  const float scale = 1.0f / std::sqrt(static_cast<float>(C / NH));
  const int64_t C3 = 3 * C, TT = T * T;
  for (int64_t b = 0; b < B; ++b) {
    const bf16* q = qkv + b * T * C3;
    const bf16* dy = dout + b * T * C;
    blas.gemm(gemm_attention_datt(T, C, NH), 1.0f, dy, DType::bf16, q + 2 * C, DType::bf16, 0.0f,
              w.scores + b * NH * TT, DType::f32);
    blas.gemm(gemm_attention_dv(T, C, NH), 1.0f, att + b * NH * TT, DType::bf16, dy, DType::bf16,
              1.0f, dqkv + b * T * C3 + 2 * C, DType::bf16);
  }
  causal_softmax_backward(w.dpre, att, w.scores, scale, B * NH * T, T, blas.stream());
  for (int64_t b = 0; b < B; ++b) {
    const bf16* q = qkv + b * T * C3;
    const bf16* dpre = w.dpre + b * NH * TT;
    blas.gemm(gemm_attention_dq(T, C, NH), 1.0f, dpre, DType::bf16, q + C, DType::bf16, 1.0f,
              dqkv + b * T * C3, DType::bf16);
    blas.gemm(gemm_attention_dk(T, C, NH), 1.0f, dpre, DType::bf16, q, DType::bf16, 1.0f,
              dqkv + b * T * C3 + C, DType::bf16);
  }
}

}  // namespace parallax::kernels::cuda
