// Softmax-shaped reductions: attention's causal softmax and its backward (one warp per query
// row), vocab-parallel cross-entropy (one block per token), and the double-precision sums of
// the optimizer step (squared gradients, losses), all without atomics. Formulas as
// kernels/src/attention.cpp and cross_entropy.cpp; per-element gradients from kernels/math.hpp.
#include <cmath>

#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"
#include "parallax/kernels/cuda/reduction_geometry.hpp"

namespace parallax::kernels::cuda {

using namespace detail;

namespace {

__global__ void causal_softmax_forward_kernel(bf16* att, const float* scores, int64_t rows,
                                              int64_t T) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t t = r % T;
  const float* x = scores + r * T;
  float m = -INFINITY;
  for (int64_t j = lane; j <= t; j += 32) m = fmaxf(m, x[j]);
  m = warp_max(m);
  float s = 0.0f;
  for (int64_t j = lane; j <= t; j += 32) s += expf(x[j] - m);
  const float inv = 1.0f / warp_sum(s);
  for (int64_t j = lane; j < T; j += 32) att[r * T + j] = j <= t ? to_bf16(expf(x[j] - m) * inv) : bf16{0};
}

__global__ void causal_softmax_backward_kernel(bf16* dpre, const bf16* att, const float* datt,
                                               float scale, int64_t rows, int64_t T) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t t = r % T;
  float w = 0.0f;
  for (int64_t j = lane; j <= t; j += 32) w += to_float(att[r * T + j]) * datt[r * T + j];
  w = warp_sum(w);
  for (int64_t j = lane; j < T; j += 32)
    dpre[r * T + j] =
        j <= t ? to_bf16(softmax_dpre(to_float(att[r * T + j]), datt[r * T + j], w, scale)) : bf16{0};
}

__global__ void ce_max_kernel(float* maxes, const bf16* logits, int64_t V, int64_t valid) {
  const int64_t i = blockIdx.x;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) m = fmaxf(m, to_float(logits[i * V + j]));
  m = block_reduce(m, Max{}, -INFINITY);
  if (threadIdx.x == 0) maxes[i] = m;
}

__global__ void ce_sums_kernel(float* sums, float* target, const bf16* logits, const float* maxes,
                               const int32_t* targets, int64_t vocab_start, int64_t V,
                               int64_t valid) {
  const int64_t i = blockIdx.x;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) s += expf(to_float(logits[i * V + j]) - maxes[i]);
  s = block_reduce(s, Sum{}, 0.0f);
  if (threadIdx.x == 0) {
    sums[i] = s;
    const int64_t col = static_cast<int64_t>(targets[i]) - vocab_start;
    target[i] = (col >= 0 && col < valid) ? to_float(logits[i * V + col]) : 0.0f;
  }
}

__global__ void ce_finish_kernel(float* losses, bf16* logits, const float* maxes, const float* sums,
                                 const float* target, const int32_t* targets, int64_t vocab_start,
                                 float dloss, int64_t V, int64_t valid) {
  const int64_t i = blockIdx.x;
  const float inv = 1.0f / sums[i];
  const int64_t col = static_cast<int64_t>(targets[i]) - vocab_start;
  if (threadIdx.x == 0) losses[i] = logf(sums[i]) + maxes[i] - target[i];
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    bf16& l = logits[i * V + j];
    l = j < valid ? to_bf16(crossentropy_dlogit(expf(to_float(l) - maxes[i]) * inv, j == col, dloss))
                  : bf16{0};
  }
}

// The gradient norm's sum of squares in two passes (reduction_geometry.hpp): one double per
// block, then one block adding them in order; no atomics, so the same bits on every run.
__global__ void sum_squares_partials_kernel(double* partial, const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = global_index(); i < n; i += grid_stride()) s += static_cast<double>(x[i]) * x[i];
  s = block_reduce(s, Sum{}, 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_partials_kernel(double* acc, const double* partial, int64_t blocks) {
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < blocks; j += blockDim.x) s += partial[j];
  s = block_reduce(s, Sum{}, 0.0);
  if (threadIdx.x == 0) *acc += s;
}

__global__ void loss_add_kernel(double* acc, const float* losses, int64_t N, float dloss) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += static_cast<double>(losses[i]);
  s = block_reduce(s, Sum{}, 0.0);
  if (threadIdx.x == 0) *acc += s * static_cast<double>(dloss);
}

unsigned rows_grid(int64_t rows) { return grid_for_rows(rows); }
unsigned as_blocks(int64_t N) { return static_cast<unsigned>(N); }

}  // namespace

void causal_softmax_forward(bf16* att, const float* scores, int64_t rows, int64_t T,
                            cudaStream_t s) {
  if (rows <= 0) return;
  causal_softmax_forward_kernel<<<rows_grid(rows), kBlock, 0, s>>>(att, scores, rows, T);
  PX_CUDA_LAUNCH_CHECK();
}

void causal_softmax_backward(bf16* dpre, const bf16* att, const float* datt, float scale,
                             int64_t rows, int64_t T, cudaStream_t s) {
  if (rows <= 0) return;
  causal_softmax_backward_kernel<<<rows_grid(rows), kBlock, 0, s>>>(dpre, att, datt, scale, rows, T);
  PX_CUDA_LAUNCH_CHECK();
}

void crossentropy_local_max(float* maxes, const bf16* logits, int64_t N, int64_t V_local,
                            int64_t valid, cudaStream_t s) {
  if (N <= 0) return;
  ce_max_kernel<<<as_blocks(N), kBlock, 0, s>>>(maxes, logits, V_local, valid);
  PX_CUDA_LAUNCH_CHECK();
}

void crossentropy_local_sums(float* sums, float* target, const bf16* logits, const float* maxes,
                             const int32_t* targets, int64_t vocab_start, int64_t N,
                             int64_t V_local, int64_t valid, cudaStream_t s) {
  if (N <= 0) return;
  ce_sums_kernel<<<as_blocks(N), kBlock, 0, s>>>(sums, target, logits, maxes, targets, vocab_start,
                                                 V_local, valid);
  PX_CUDA_LAUNCH_CHECK();
}

void crossentropy_finish(float* losses, bf16* logits, const float* maxes, const float* sums,
                         const float* target, const int32_t* targets, int64_t vocab_start,
                         float dloss, int64_t N, int64_t V_local, int64_t valid, cudaStream_t s) {
  if (N <= 0) return;
  ce_finish_kernel<<<as_blocks(N), kBlock, 0, s>>>(losses, logits, maxes, sums, target, targets,
                                                   vocab_start, dloss, V_local, valid);
  PX_CUDA_LAUNCH_CHECK();
}

void sum_squares_add(double* acc, const float* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  static_assert(kSumBlockThreads == kBlock, "block_reduce reduces kBlock threads");
  const int64_t blocks = sum_squares_blocks(n);
  StreamScratch partial(static_cast<size_t>(blocks) * sizeof(double), s);
  sum_squares_partials_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(partial.as<double>(), x, n);
  PX_CUDA_LAUNCH_CHECK();
  sum_partials_kernel<<<1, kBlock, 0, s>>>(acc, partial.as<double>(), blocks);
  PX_CUDA_LAUNCH_CHECK();
}

void loss_add(double* acc, const float* losses, int64_t N, float dloss, cudaStream_t s) {
  loss_add_kernel<<<1, kBlock, 0, s>>>(acc, losses, N, dloss);
  PX_CUDA_LAUNCH_CHECK();
}

}  // namespace parallax::kernels::cuda
