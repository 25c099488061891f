#pragma once
// CPU kernels, llm.c style: <op>_forward(out, ..., inp, weight, dims) and
// <op>_backward(dinp, dweight, ..., dout, ...). Backward ACCUMULATES (+=) into every gradient so
// residual branches and shared weights just work. Shapes in comments: N = B*T rows.
#include <cstdint>

#include "parallax/kernels/math.hpp"

namespace parallax::kernels {

// out (N, OC) = inp (N, C) @ weight (OC, C)^T [+ bias (OC)], through BLAS sgemm.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int64_t N, int64_t C, int64_t OC);
// dinp (N, C) += dout @ weight; dweight (OC, C) += dout^T @ inp; dbias (OC) += column sums.
// dinp and dbias may be null.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int64_t N, int64_t C, int64_t OC);
// The oracle: the same product by three loops (tests compare BLAS against it).
void matmul_forward_naive(float* out, const float* inp, const float* weight, const float* bias,
                          int64_t N, int64_t C, int64_t OC);

// out (N, C) += bias (C) on every row; bias_backward: dbias (C) += column sums of dout.
void bias_forward(float* out, const float* bias, int64_t N, int64_t C);
void bias_backward(float* dbias, const float* dout, int64_t N, int64_t C);

// LayerNorm over the last dimension; mean, rstd (N) are kept for backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C);
// RMSNorm: out = inp * rstd * weight, rstd = 1/sqrt(mean(inp^2) + eps).
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C);

// Causal self-attention of NH heads of size C/NH. inp (B, T, 3C) holds q, k, v (each C wide,
// heads contiguous); att (B, NH, T, T) receives the softmax; out (B, T, C).
void attention_forward(float* out, float* att, const float* inp, int64_t B, int64_t T, int64_t C,
                       int64_t NH);
void attention_backward(float* dinp, const float* dout, const float* inp, const float* att,
                        int64_t B, int64_t T, int64_t C, int64_t NH);
// Grouped-query attention: KVH key/value heads (NH % KVH == 0), query head h attending with KV
// head h / (NH / KVH) (Ainslie et al. 2023; KVH = NH is the above). inp (B, T, C + 2 KVH C/NH)
// holds q (C wide), k and v (KVH C/NH wide each).
void attention_forward(float* out, float* att, const float* inp, int64_t B, int64_t T, int64_t C,
                       int64_t NH, int64_t KVH);
void attention_backward(float* dinp, const float* dout, const float* inp, const float* att,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH);
// The same attention without the (B, NH, T, T) softmax: online softmax over key blocks of
// kFlashKeyBlock (FlashAttention, Dao et al. 2022), keeping out and each row's log-sum-exp
// lse (B, NH, T) only; backward recomputes the probabilities from lse. The kernels above stay the
// oracle. Per query row and head: 2 T' hs multiply-adds forward (scores, weighted values) and
// 5 T' hs backward (scores again, dp, dv, dq, dk), T' = the row's t + 1 keys.
inline constexpr int64_t kFlashKeyBlock = 64;
void flash_attention_forward(float* out, float* lse, const float* inp, int64_t B, int64_t T,
                             int64_t C, int64_t NH, int64_t KVH);
void flash_attention_backward(float* dinp, const float* dout, const float* inp, const float* out,
                              const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                              int64_t KVH);
// The same kernel with the query rows and the key/value rows held apart, each query row at a
// given position of the sequence (context parallelism: a rank's query rows are its chunks of the
// sequence, the keys and values the whole sequence gathered). Query row t of batch element b
// holds NH heads of hs at q + (b Tq + t) q_stride + h hs and attends the keys at positions
// 0 .. q_pos[t]; key row t2 (position t2) holds KVH heads at k (v) + (b Tk + t2) kv_stride. out
// (B, Tq, NH hs), lse (B, NH, Tq). Backward accumulates into dq (q's layout) and dk, dv (k's and
// v's layouts).
struct FlashRows {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float *k = nullptr, *v = nullptr;
  int64_t kv_stride = 0;
  const int64_t* q_pos = nullptr;  // (Tq), each < Tk
  int64_t B = 0, Tq = 0, Tk = 0, NH = 0, KVH = 0, hs = 0;
};
void flash_attention_rows_forward(float* out, float* lse, const FlashRows& r);
void flash_attention_rows_backward(float* dq, float* dk, float* dv, const float* dout,
                                   const float* out, const float* lse, const FlashRows& r);

// Rotary position embeddings (Su et al. 2021, RoFormer), rotate-half pairing as Hugging Face
// Llama and Megatron-Core (not interleaved): pair i of a head is (x[i], x[i + d/2]), rotated by
// the angle p * inv_freq[i] at sequence position p. inv_freq[i] = base^(-2i/d), optionally with
// Llama 3.1's frequency scaling (Hugging Face's rope_type "llama3"): wavelengths 2 pi/inv_freq
// above original_max_position / low_freq_factor are stretched by `factor`, those below
// original_max_position / high_freq_factor kept, those between interpolated smoothly.
struct RopeScaling {
  double factor = 0;  // 0: no scaling
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  double original_max_position = 8192;
};
void rope_inv_freq(float* inv_freq, int64_t head_dim, double base, const RopeScaling& scaling = {});
// x: `rows` rows `row_stride` apart, each holding `heads` heads of head_dim (q or k of a fused
// QKV activation); row r is at sequence position (row0 + r) % T. Rotated in place.
void rope_forward(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                  const float* inv_freq, int64_t row0, int64_t T);
// In place: the gradient with respect to the rotated x becomes the gradient with respect to the
// x before rotation (the inverse rotation: the map is orthogonal).
void rope_backward(float* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                   const float* inv_freq, int64_t row0, int64_t T);

// out (n) = gelu(inp); dinp += gelu'(inp) * dout.
void gelu_forward(float* out, const float* inp, int64_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);
// inp (N, 2F) = [a | b]; out (N, F) = silu(a) * b.
void swiglu_forward(float* out, const float* inp, int64_t N, int64_t F);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F);

// out (n) = a + b; backward: da += dout, db += dout.
void residual_forward(float* out, const float* a, const float* b, int64_t n);
void residual_backward(float* da, float* db, const float* dout, int64_t n);

// Vocab-parallel embedding: this rank holds rows [vocab_start, vocab_start + vocab_rows) of wte.
// out (N, C) = wte[token - vocab_start] for tokens in range, 0 otherwise (the TP all-reduce sums
// the ranks' parts).
void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t vocab_start,
                       int64_t vocab_rows, int64_t N, int64_t C);
void embedding_backward(float* dwte, const float* dout, const int32_t* tokens,
                        int64_t vocab_start, int64_t vocab_rows, int64_t N, int64_t C);
// Learned positions: out (B, T, C) += wpe (T, C); dwpe += sum over B of dout.
void position_forward(float* out, const float* wpe, int64_t B, int64_t T, int64_t C);
void position_backward(float* dwpe, const float* dout, int64_t B, int64_t T, int64_t C);
// The same for `rows` consecutive rows of the flattened (B*T) sequence starting at row0 (the
// rows a rank holds under sequence parallelism): row i has position (row0 + i) mod T.
void position_forward_rows(float* out, const float* wpe, int64_t row0, int64_t rows, int64_t T,
                           int64_t C);
void position_backward_rows(float* dwpe, const float* dout, int64_t row0, int64_t rows,
                            int64_t T, int64_t C);

// Vocab-parallel cross-entropy in three passes around the TP all-reduces. logits (N, V_local);
// the first `valid` columns are real vocabulary, the rest padding (ignored).
//   1. row max of the local columns -> maxes (N)         [all-reduce MAX over TP]
//   2. sums (N) = sum exp(logit - max); target (N) = the target's logit when this rank holds it,
//      else 0                                            [all-reduce SUM over TP, both]
//   3. losses (N) = log(sum) + max - target; logits are overwritten by
//      dlogits = (softmax - onehot) * dloss (padding columns 0).
void crossentropy_local_max(float* maxes, const float* logits, int64_t N, int64_t V_local,
                            int64_t valid);
void crossentropy_local_sums(float* sums, float* target, const float* logits, const float* maxes,
                             const int32_t* targets, int64_t vocab_start, int64_t N,
                             int64_t V_local, int64_t valid);
void crossentropy_finish(float* losses, float* logits, const float* maxes, const float* sums,
                         const float* target, const int32_t* targets, int64_t vocab_start,
                         float dloss, int64_t N, int64_t V_local, int64_t valid);

// AdamW over n elements at step t (1-based).
void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamW& h, int64_t t, bool decay);

// Sum of squares in double (gradient clipping); scale: x *= s.
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, float s, int64_t n);

}  // namespace parallax::kernels
