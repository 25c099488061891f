#pragma once
// Launch geometry and warp/block reductions shared by the .cu files.
#include <cstdint>

#include "parallax/kernels/cuda/check.hpp"
#include "parallax/kernels/math.hpp"

namespace parallax::kernels::cuda::detail {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = kBlock / 32;

// Blocks for a grid-stride loop over n elements (capped; the loops cover the rest).
inline unsigned grid_for(int64_t n) {
  const int64_t b = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}
// Blocks for one warp per row.
inline unsigned grid_for_rows(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__device__ inline int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ inline double warp_sum(double x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Block-wide reductions for kBlock threads; every thread gets the result.
template <class T, class Op>
__device__ inline T block_reduce(T x, Op op, T identity) {
  __shared__ T partial[kWarpsPerBlock];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  T r = lane < kWarpsPerBlock ? partial[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) r = op(r, __shfl_xor_sync(0xffffffffu, r, o));
  return r;
}

struct Sum {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace parallax::kernels::cuda::detail
