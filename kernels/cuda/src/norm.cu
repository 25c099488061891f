// LayerNorm and RMSNorm: one warp per row for the statistics and input gradients; one thread
// per column, looping over rows in order, for the weight gradients (deterministic). Formulas as
// the CPU kernels (kernels/src/norm.cpp), per-element backward from kernels/math.hpp.
#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::kernels::cuda {

using namespace detail;

namespace {

__device__ inline int64_t warp_row() {
  return static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
}
__device__ inline int lane_id() { return static_cast<int>(threadIdx.x & 31); }

__global__ void layernorm_forward_kernel(bf16* out, float* mean, float* rstd, const bf16* inp,
                                         const bf16* w, const bf16* b, int64_t N, int64_t C) {
  const int64_t i = warp_row();
  if (i >= N) return;
  const bf16* x = inp + i * C;
  float s = 0.0f;
  for (int64_t c = lane_id(); c < C; c += 32) s += to_float(x[c]);
  const float m = warp_sum(s) / static_cast<float>(C);
  float var = 0.0f;
  for (int64_t c = lane_id(); c < C; c += 32) {
    const float d = to_float(x[c]) - m;
    var += d * d;
  }
  const float r = 1.0f / sqrtf(warp_sum(var) / static_cast<float>(C) + kNormEps);
  for (int64_t c = lane_id(); c < C; c += 32)
    out[i * C + c] = to_bf16((to_float(x[c]) - m) * r * to_float(w[c]) + to_float(b[c]));
  if (lane_id() == 0) {
    mean[i] = m;
    rstd[i] = r;
  }
}

__global__ void layernorm_dinp_kernel(bf16* dinp, const bf16* dout, const bf16* inp,
                                      const bf16* w, const float* mean, const float* rstd,
                                      int64_t N, int64_t C) {
  const int64_t i = warp_row();
  if (i >= N) return;
  float dm = 0.0f, dnm = 0.0f;
  for (int64_t c = lane_id(); c < C; c += 32) {
    const float norm = (to_float(inp[i * C + c]) - mean[i]) * rstd[i];
    const float dnorm = to_float(w[c]) * to_float(dout[i * C + c]);
    dm += dnorm;
    dnm += dnorm * norm;
  }
  dm = warp_sum(dm) / static_cast<float>(C);
  dnm = warp_sum(dnm) / static_cast<float>(C);
  for (int64_t c = lane_id(); c < C; c += 32) {
    const float norm = (to_float(inp[i * C + c]) - mean[i]) * rstd[i];
    const float dnorm = to_float(w[c]) * to_float(dout[i * C + c]);
    bf16& dx = dinp[i * C + c];
    dx = to_bf16(to_float(dx) + layernorm_dinp(dnorm, norm, dm, dnm, rstd[i]));
  }
}

__global__ void layernorm_dweight_kernel(float* dw, float* db, const bf16* dout, const bf16* inp,
                                         const float* mean, const float* rstd, int64_t N,
                                         int64_t C) {
  const int64_t c = global_index();
  if (c >= C) return;
  float w = 0.0f, bsum = 0.0f;
  for (int64_t i = 0; i < N; ++i) {
    const float dy = to_float(dout[i * C + c]);
    w += (to_float(inp[i * C + c]) - mean[i]) * rstd[i] * dy;
    bsum += dy;
  }
  dw[c] += w;
  db[c] += bsum;
}

__global__ void rmsnorm_forward_kernel(bf16* out, float* rstd, const bf16* inp, const bf16* w,
                                       int64_t N, int64_t C) {
  const int64_t i = warp_row();
  if (i >= N) return;
  float ss = 0.0f;
  for (int64_t c = lane_id(); c < C; c += 32) {
    const float x = to_float(inp[i * C + c]);
    ss += x * x;
  }
  const float r = 1.0f / sqrtf(warp_sum(ss) / static_cast<float>(C) + kNormEps);
  for (int64_t c = lane_id(); c < C; c += 32)
    out[i * C + c] = to_bf16(to_float(inp[i * C + c]) * r * to_float(w[c]));
  if (lane_id() == 0) rstd[i] = r;
}

__global__ void rmsnorm_dinp_kernel(bf16* dinp, const bf16* dout, const bf16* inp, const bf16* w,
                                    const float* rstd, int64_t N, int64_t C) {
  const int64_t i = warp_row();
  if (i >= N) return;
  float dot = 0.0f;
  for (int64_t c = lane_id(); c < C; c += 32)
    dot += to_float(w[c]) * to_float(dout[i * C + c]) * to_float(inp[i * C + c]);
  const float s = rstd[i];
  const float k = s * s * s / static_cast<float>(C) * warp_sum(dot);
  for (int64_t c = lane_id(); c < C; c += 32) {
    bf16& dx = dinp[i * C + c];
    dx = to_bf16(to_float(dx) + rmsnorm_dinp(to_float(inp[i * C + c]), to_float(w[c]),
                                             to_float(dout[i * C + c]), s, k));
  }
}

__global__ void rmsnorm_dweight_kernel(float* dw, const bf16* dout, const bf16* inp,
                                       const float* rstd, int64_t N, int64_t C) {
  const int64_t c = global_index();
  if (c >= C) return;
  float w = 0.0f;
  for (int64_t i = 0; i < N; ++i) w += to_float(inp[i * C + c]) * rstd[i] * to_float(dout[i * C + c]);
  dw[c] += w;
}

__global__ void bias_backward_kernel(float* db, const bf16* dout, int64_t N, int64_t C) {
  const int64_t c = global_index();
  if (c >= C) return;
  float s = 0.0f;
  for (int64_t i = 0; i < N; ++i) s += to_float(dout[i * C + c]);
  db[c] += s;
}

unsigned columns_grid(int64_t C) { return static_cast<unsigned>((C + kBlock - 1) / kBlock); }

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight,
                       const bf16* bias, int64_t N, int64_t C, cudaStream_t s) {
  if (N <= 0) return;
  layernorm_forward_kernel<<<grid_for_rows(N), kBlock, 0, s>>>(out, mean, rstd, inp, weight, bias, N, C);
  PX_CUDA_LAUNCH_CHECK();
}

void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout,
                        const bf16* inp, const bf16* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C, cudaStream_t s) {
  if (N <= 0) return;
  layernorm_dinp_kernel<<<grid_for_rows(N), kBlock, 0, s>>>(dinp, dout, inp, weight, mean, rstd, N, C);
  PX_CUDA_LAUNCH_CHECK();
  layernorm_dweight_kernel<<<columns_grid(C), kBlock, 0, s>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
  PX_CUDA_LAUNCH_CHECK();
}

void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* weight, int64_t N,
                     int64_t C, cudaStream_t s) {
  if (N <= 0) return;
  rmsnorm_forward_kernel<<<grid_for_rows(N), kBlock, 0, s>>>(out, rstd, inp, weight, N, C);
  PX_CUDA_LAUNCH_CHECK();
}

void rmsnorm_backward(bf16* dinp, float* dweight, const bf16* dout, const bf16* inp,
                      const bf16* weight, const float* rstd, int64_t N, int64_t C,
                      cudaStream_t s) {
  if (N <= 0) return;
  rmsnorm_dinp_kernel<<<grid_for_rows(N), kBlock, 0, s>>>(dinp, dout, inp, weight, rstd, N, C);
  PX_CUDA_LAUNCH_CHECK();
  rmsnorm_dweight_kernel<<<columns_grid(C), kBlock, 0, s>>>(dweight, dout, inp, rstd, N, C);
  PX_CUDA_LAUNCH_CHECK();
}

void bias_backward(float* dbias, const bf16* dout, int64_t N, int64_t C, cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  bias_backward_kernel<<<columns_grid(C), kBlock, 0, s>>>(dbias, dout, N, C);
  PX_CUDA_LAUNCH_CHECK();
}

}  // namespace parallax::kernels::cuda
