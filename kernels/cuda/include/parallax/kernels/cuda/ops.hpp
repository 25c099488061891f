#pragma once
// The CUDA backend's kernels, with the CPU kernels' shapes and conventions (kernels/cpu.hpp):
// outputs first, backward ACCUMULATES (+=) into every gradient. Weights and activations are
// bf16, statistics, losses, master weights, Adam state and weight gradients fp32; the math in
// between is fp32 and comes from kernels/math.hpp, the header the CPU kernels use. Every
// function enqueues on `s` (the GEMMs on the Blas handle's stream) and returns at once: none
// synchronises with the host. Launch errors throw cuda::Error with file and line.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "parallax/kernels/cuda/blas.hpp"
#include "parallax/kernels/math.hpp"

namespace parallax::kernels::cuda {

using kernels::bf16;

void cast_to_bf16(bf16* out, const float* in, int64_t n, cudaStream_t s);
void cast_to_float(float* out, const bf16* in, int64_t n, cudaStream_t s);

// out (N, OC) = inp (N, C) @ weight (OC, C)^T [+ bias (OC)].
void matmul_forward(const Blas& blas, bf16* out, const bf16* inp, const bf16* weight,
                    const bf16* bias, int64_t N, int64_t C, int64_t OC);
// dinp (N, C) += dout @ weight; dweight (OC, C) += dout^T @ inp (fp32); dbias += column sums.
// dinp and dbias may be null.
void matmul_backward(const Blas& blas, bf16* dinp, float* dweight, float* dbias,
                     const bf16* dout, const bf16* inp, const bf16* weight, int64_t N,
                     int64_t C, int64_t OC);
void bias_forward(bf16* out, const bf16* bias, int64_t N, int64_t C, cudaStream_t s);
void bias_backward(float* dbias, const bf16* dout, int64_t N, int64_t C, cudaStream_t s);

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight,
                       const bf16* bias, int64_t N, int64_t C, cudaStream_t s);
void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout,
                        const bf16* inp, const bf16* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C, cudaStream_t s);
void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* weight, int64_t N,
                     int64_t C, cudaStream_t s);
void rmsnorm_backward(bf16* dinp, float* dweight, const bf16* dout, const bf16* inp,
                      const bf16* weight, const float* rstd, int64_t N, int64_t C,
                      cudaStream_t s);

// Causal attention (batched cuBLAS + softmax kernels). Workspace of
// attention_workspace_bytes(B, T, NH): fp32 scores / their gradients and bf16 softmax gradients.
size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t NH);
// KVH key/value heads (grouped-query attention; KVH = NH: multi-head); qkv rows q | k | v
// (gemm_args.hpp's attention_qkv_width).
void attention_forward(const Blas& blas, bf16* out, bf16* att, const bf16* qkv, void* workspace,
                       int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH);
void attention_backward(const Blas& blas, bf16* dqkv, const bf16* dout, const bf16* qkv,
                        const bf16* att, void* workspace, int64_t B, int64_t T, int64_t C,
                        int64_t NH, int64_t KVH);
// Softmax kernels of attention, exposed for the op tests. scores (rows, T) fp32 for `rows`
// = B*NH*T query rows; row r is query position r % T.
void causal_softmax_forward(bf16* att, const float* scores, int64_t rows, int64_t T,
                            cudaStream_t s);
void causal_softmax_backward(bf16* dpre, const bf16* att, const float* datt, float scale,
                             int64_t rows, int64_t T, cudaStream_t s);

void gelu_forward(bf16* out, const bf16* inp, int64_t n, cudaStream_t s);
void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t n, cudaStream_t s);
void swiglu_forward(bf16* out, const bf16* inp, int64_t N, int64_t F, cudaStream_t s);
void swiglu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t N, int64_t F,
                     cudaStream_t s);
void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n, cudaStream_t s);

// Rotary position embeddings (kernels/cpu.hpp's rope_forward/rope_backward, the same pairing
// and per-pair math): `heads` heads of head_dim in each of `rows` rows `row_stride` apart, row r
// at position (row0 + r) % T, rotated in place (backward: by the inverse rotation). inv_freq
// (head_dim / 2, fp32, on the device) from kernels::rope_inv_freq.
void rope_forward(bf16* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                  const float* inv_freq, int64_t row0, int64_t T, cudaStream_t s);
void rope_backward(bf16* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                   const float* inv_freq, int64_t row0, int64_t T, cudaStream_t s);

void embedding_forward(bf16* out, const int32_t* tokens, const bf16* wte, int64_t vocab_start,
                       int64_t vocab_rows, int64_t N, int64_t C, cudaStream_t s);
void embedding_backward(float* dwte, const bf16* dout, const int32_t* tokens,
                        int64_t vocab_start, int64_t vocab_rows, int64_t N, int64_t C,
                        cudaStream_t s);
void position_forward_rows(bf16* out, const bf16* wpe, int64_t row0, int64_t rows, int64_t T,
                           int64_t C, cudaStream_t s);
void position_backward_rows(float* dwpe, const bf16* dout, int64_t row0, int64_t rows,
                            int64_t T, int64_t C, cudaStream_t s);

void crossentropy_local_max(float* maxes, const bf16* logits, int64_t N, int64_t V_local,
                            int64_t valid, cudaStream_t s);
void crossentropy_local_sums(float* sums, float* target, const bf16* logits, const float* maxes,
                             const int32_t* targets, int64_t vocab_start, int64_t N,
                             int64_t V_local, int64_t valid, cudaStream_t s);
void crossentropy_finish(float* losses, bf16* logits, const float* maxes, const float* sums,
                         const float* target, const int32_t* targets, int64_t vocab_start,
                         float dloss, int64_t N, int64_t V_local, int64_t valid, cudaStream_t s);

// AdamW on fp32 master weights and state at step t; writes the bf16 working copy too.
void adamw_update(float* master, bf16* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamW& h, int64_t t, bool decay, cudaStream_t s);
// *acc += sum of squares of x (double accumulation).
void sum_squares_add(double* acc, const float* x, int64_t n, cudaStream_t s);
// Global-norm clipping from the device: norm = sqrt(*norm_sq); when clip > 0 and norm > clip,
// x *= clip / (norm + 1e-6). The host never reads the norm inside the step.
void clip_scale(float* x, int64_t n, const double* norm_sq, float clip, cudaStream_t s);
// a = b = a + b (tied embedding gradients held twice on one rank).
void tied_sum(float* a, float* b, int64_t n, cudaStream_t s);
// *acc += (sum of losses[0..N)) * dloss, in double.
void loss_add(double* acc, const float* losses, int64_t N, float dloss, cudaStream_t s);

}  // namespace parallax::kernels::cuda
