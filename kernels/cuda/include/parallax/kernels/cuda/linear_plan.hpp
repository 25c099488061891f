#pragma once
// The sequence of GEMMs (and the kernels between them) of the CUDA backend's linear layers and
// causal attention, as templates over the GEMM and kernel callables. src/linear.cpp runs them
// with cuBLAS and the CUDA kernels; the CPU tests run the very same sequences with a
// column-major reference GEMM (cuBLAS's contract) and compare with the CPU kernels, so the
// argument plumbing (operands, offsets, leading dimensions, strides, alpha/beta) is checked
// without a GPU. Pure C++: no CUDA headers.
//
// gemm(const RowMajorGemm&, float alpha, const void* A, DType, const void* B, DType, float beta,
//      void* C, DType): row-major C = alpha op(A) op(B) + beta C (see gemm_args.hpp).
#include <cmath>
#include <cstdint>

#include "parallax/kernels/cuda/gemm_args.hpp"

namespace parallax::kernels::cuda {

enum class DType { f32, bf16 };

// out (N, OC) = inp (N, C) @ weight (OC, C)^T [+ bias]; bias_forward(out, bias, N, OC).
template <class Gemm, class Bias, class T>
void matmul_forward_plan(Gemm&& gemm, Bias&& bias_forward, T* out, const T* inp, const T* weight,
                         const T* bias, int64_t N, int64_t C, int64_t OC) {
  gemm(gemm_linear_forward(N, C, OC), 1.0f, inp, DType::bf16, weight, DType::bf16, 0.0f, out,
       DType::bf16);
  if (bias) bias_forward(out, bias, N, OC);
}

// dinp (N, C) += dout @ weight; dweight (OC, C) += dout^T @ inp (fp32); dbias += column sums.
template <class Gemm, class BiasBack, class T>
void matmul_backward_plan(Gemm&& gemm, BiasBack&& bias_backward, T* dinp, float* dweight,
                          float* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                          int64_t C, int64_t OC) {
  if (dinp)
    gemm(gemm_linear_dinp(N, C, OC), 1.0f, dout, DType::bf16, weight, DType::bf16, 1.0f, dinp,
         DType::bf16);
  gemm(gemm_linear_dweight(N, C, OC), 1.0f, dout, DType::bf16, inp, DType::bf16, 1.0f, dweight,
       DType::f32);
  if (dbias) bias_backward(dbias, dout, N, OC);
}

// scores: (B, NH, T, T) fp32 workspace. softmax(att, scores, rows, T): causal softmax of each
// of the B*NH*T rows (row r is query position r % T). qkv rows: q (C) | k (KVH hs) | v (KVH hs)
// (gemm_args.hpp); per batch element, one strided-batched GEMM per member g of a query group.
template <class Gemm, class Softmax, class T>
void attention_forward_plan(Gemm&& gemm, Softmax&& softmax, T* out, T* att, const T* qkv,
                            float* scores, int64_t B, int64_t Tn, int64_t C, int64_t NH,
                            int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH), TT = Tn * Tn;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g)
      gemm(gemm_attention_scores(Tn, C, NH, KVH), scale, qkv + b * Tn * W + g * hs, DType::bf16,
           qkv + b * Tn * W + C, DType::bf16, 0.0f, scores + b * NH * TT + g * TT, DType::f32);
  softmax(att, scores, B * NH * Tn, Tn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g)
      gemm(gemm_attention_values(Tn, C, NH, KVH), 1.0f, att + b * NH * TT + g * TT, DType::bf16,
           qkv + b * Tn * W + C + KVH * hs, DType::bf16, 0.0f, out + b * Tn * C + g * hs,
           DType::bf16);
}

// datt: (B, NH, T, T) fp32 workspace; dpre: (B, NH, T, T) workspace of T.
// softmax_backward(dpre, att, datt, scale, rows, T). dqkv is accumulated into (beta 1): the
// k and v gradients sum over the G query heads sharing them.
template <class Gemm, class SoftmaxBack, class T>
void attention_backward_plan(Gemm&& gemm, SoftmaxBack&& softmax_backward, T* dqkv, const T* dout,
                             const T* qkv, const T* att, float* datt, T* dpre, int64_t B,
                             int64_t Tn, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH), TT = Tn * Tn;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t k_off = C, v_off = C + KVH * hs;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g) {
      const T* q = qkv + b * Tn * W;
      const T* dy = dout + b * Tn * C + g * hs;
      gemm(gemm_attention_datt(Tn, C, NH, KVH), 1.0f, dy, DType::bf16, q + v_off, DType::bf16,
           0.0f, datt + b * NH * TT + g * TT, DType::f32);
      gemm(gemm_attention_dv(Tn, C, NH, KVH), 1.0f, att + b * NH * TT + g * TT, DType::bf16, dy,
           DType::bf16, 1.0f, dqkv + b * Tn * W + v_off, DType::bf16);
    }
  softmax_backward(dpre, att, datt, scale, B * NH * Tn, Tn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g) {
      const T* q = qkv + b * Tn * W;
      const T* dp = dpre + b * NH * TT + g * TT;
      gemm(gemm_attention_dq(Tn, C, NH, KVH), 1.0f, dp, DType::bf16, q + k_off, DType::bf16, 1.0f,
           dqkv + b * Tn * W + g * hs, DType::bf16);
      gemm(gemm_attention_dk(Tn, C, NH, KVH), 1.0f, dp, DType::bf16, q + g * hs, DType::bf16, 1.0f,
           dqkv + b * Tn * W + k_off, DType::bf16);
    }
}

}  // namespace parallax::kernels::cuda
