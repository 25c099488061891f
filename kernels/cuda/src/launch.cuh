#pragma once
// Launch geometry and warp/block reductions shared by the .cu files.
#include <cstdint>

#include <cuda_runtime_api.h>

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

// f(i) for i in [0, n), grid-stride, on stream s.
template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  for (int64_t i = global_index(); i < n; i += grid_stride()) f(i);
}

template <class F>
void for_each(int64_t n, cudaStream_t s, F f) {
  if (n <= 0) return;
  for_each_kernel<<<grid_for(n), kBlock, 0, s>>>(n, f);
  PX_CUDA_LAUNCH_CHECK();
}

// Scratch memory ordered on a stream (cudaMallocAsync from the device's pool): usable by the
// kernels enqueued after it on `s`, freed after them. Neither call waits for the device.
class StreamScratch {
 public:
  StreamScratch(size_t bytes, cudaStream_t s) : s_(s) { PX_CUDA(cudaMallocAsync(&p_, bytes < 1 ? 1 : bytes, s)); }
  ~StreamScratch() { cudaFreeAsync(p_, s_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  template <class T>
  T* as(size_t byte_offset = 0) const { return reinterpret_cast<T*>(static_cast<char*>(p_) + byte_offset); }

 private:
  void* p_ = nullptr;
  cudaStream_t s_;
};

struct Sum {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace parallax::kernels::cuda::detail
