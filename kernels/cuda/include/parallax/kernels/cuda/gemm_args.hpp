#pragma once
// Row-major GEMMs expressed as cuBLAS's column-major calls. Pure C++ (no CUDA headers), so the
// CPU tests check the mapping against a column-major reference GEMM (tests/kernels_cuda).
//
// The executor's tensors are row-major: C (M, N) = op(A) op(B), with A stored (M, K) or, when
// trans_a, (K, M); B stored (K, N) or, when trans_b, (N, K); leading dimensions are row lengths.
// A row-major (r, c) matrix with leading dimension ld is the column-major (c, r) matrix with the
// same ld, i.e. its transpose, so C^T = op(B)^T op(A)^T is one column-major GEMM of the
// (N, M) result with the operands swapped and the same transpose flags:
//   cublas(op_b, op_a, m = N, n = M, k = K, B, ldb, A, lda, C, ldc).
#include <cstdint>

namespace parallax::kernels::cuda {

struct RowMajorGemm {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  // Batched: element offsets between consecutive matrices (0 for one GEMM).
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
  bool operator==(const RowMajorGemm&) const = default;
};

struct ColMajorGemm {
  bool trans_first = false, trans_second = false;  // cublas transa, transb
  int64_t m = 0, n = 0, k = 0;
  bool first_is_b = true;                          // the first operand is the row-major B
  int64_t ld_first = 0, ld_second = 0, ldc = 0;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;
  int64_t batch = 1;
};

inline ColMajorGemm to_col_major(const RowMajorGemm& g) {
  ColMajorGemm c;
  c.trans_first = g.trans_b;
  c.trans_second = g.trans_a;
  c.m = g.N;
  c.n = g.M;
  c.k = g.K;
  c.first_is_b = true;
  c.ld_first = g.ldb;
  c.ld_second = g.lda;
  c.ldc = g.ldc;
  c.stride_first = g.stride_b;
  c.stride_second = g.stride_a;
  c.stride_c = g.stride_c;
  c.batch = g.batch;
  return c;
}

// The executor's GEMMs (kernels/cpu.hpp) in this form; N rows, C inputs, OC outputs.
// out (N, OC) = inp (N, C) @ weight (OC, C)^T
inline RowMajorGemm gemm_linear_forward(int64_t N, int64_t C, int64_t OC) {
  return {false, true, N, OC, C, C, C, OC, 0, 0, 0, 1};
}
// dinp (N, C) += dout (N, OC) @ weight (OC, C)
inline RowMajorGemm gemm_linear_dinp(int64_t N, int64_t C, int64_t OC) {
  return {false, false, N, C, OC, OC, C, C, 0, 0, 0, 1};
}
// dweight (OC, C) += dout^T (OC, N) @ inp (N, C)
inline RowMajorGemm gemm_linear_dweight(int64_t N, int64_t C, int64_t OC) {
  return {true, false, OC, C, N, OC, C, C, 0, 0, 0, 1};
}

// Causal attention of one batch element b with NH query heads of size hs = C/NH and KVH key/value
// heads (grouped-query attention: query head h uses KV head h / G, G = NH/KVH; KVH = NH is
// multi-head attention). qkv rows are W = C + 2 KVH hs wide: q (C), k (KVH hs), v (KVH hs), heads
// contiguous inside each block; scores (NH, T, T); y rows C wide. One GEMM per member g of a
// group, batched over the KVH groups: query head kv*G + g (q stride G hs, scores stride G T^2)
// against KV head kv (stride hs). The caller's offsets: q at g hs, k at C, v at C + KVH hs,
// scores at g T^2.
inline int64_t attention_qkv_width(int64_t C, int64_t NH, int64_t KVH) {
  return C + 2 * KVH * (C / NH);
}
// scores_h (T, T) = q_h (T, hs) @ k_kv^T
inline RowMajorGemm gemm_attention_scores(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {false, true, T, T, hs, W, W, T, G * hs, hs, G * T * T, KVH};
}
// y_h (T, hs) = att_h (T, T) @ v_kv (T, hs)
inline RowMajorGemm gemm_attention_values(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {false, false, T, hs, T, T, W, C, G * T * T, hs, G * hs, KVH};
}
// datt_h (T, T) = dy_h (T, hs) @ v_kv^T
inline RowMajorGemm gemm_attention_datt(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {false, true, T, T, hs, C, W, T, G * hs, hs, G * T * T, KVH};
}
// dv_kv (T, hs) += att_h^T (T, T) @ dy_h (T, hs)   (summed over the group's g by the caller)
inline RowMajorGemm gemm_attention_dv(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {true, false, T, hs, T, T, C, W, G * T * T, G * hs, hs, KVH};
}
// dq_h (T, hs) += dpre_h (T, T) @ k_kv (T, hs)
inline RowMajorGemm gemm_attention_dq(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {false, false, T, hs, T, T, W, W, G * T * T, hs, G * hs, KVH};
}
// dk_kv (T, hs) += dpre_h^T (T, T) @ q_h (T, hs)   (summed over the group's g by the caller)
inline RowMajorGemm gemm_attention_dk(int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, G = NH / KVH, W = attention_qkv_width(C, NH, KVH);
  return {true, false, T, hs, T, T, W, W, G * T * T, G * hs, hs, KVH};
}

}  // namespace parallax::kernels::cuda
