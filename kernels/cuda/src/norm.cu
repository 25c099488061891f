// LayerNorm and RMSNorm: one warp per row for the statistics and input gradients; the weight
// and bias gradients (column sums over all rows) in the two deterministic passes of
// reduction_geometry.hpp. Formulas as the CPU kernels (kernels/src/norm.cpp), per-element
// backward from kernels/math.hpp.
#include <string>

#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"
#include "parallax/kernels/cuda/reduction_geometry.hpp"

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

static_assert(kColumnsPerTile == 32 && kBlock == kColumnsPerTile * kWarpsPerBlock,
              "pass 1 maps a block's lanes to columns and its warps to rows");

// Pass 1: block (tile, chunk) sums f's S values per column over the chunk's rows. Lane = column,
// warp w takes rows w, w + 8, ... in order; the warps' sums are then added in warp order.
template <int S, class F>
__global__ void column_partials_kernel(float* partial, int64_t N, int64_t C, int64_t chunks, F f) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnsPerTile + lane;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * kRowsPerChunk;
  const int64_t r1 = r0 + kRowsPerChunk < N ? r0 + kRowsPerChunk : N;
  float acc[S] = {};
  if (c < C)
    for (int64_t i = r0 + warp; i < r1; i += kWarpsPerBlock) f(i, c, acc);
  __shared__ float by_warp[S][kWarpsPerBlock][kColumnsPerTile];
  for (int k = 0; k < S; ++k) by_warp[k][warp][lane] = acc[k];
  __syncthreads();
  if (warp != 0 || c >= C) return;
  for (int k = 0; k < S; ++k) {
    float sum = 0.0f;
    for (int w = 0; w < kWarpsPerBlock; ++w) sum += by_warp[k][w][lane];
    partial[(k * chunks + chunk) * C + c] = sum;
  }
}

// Pass 2: out_k[c] += the chunks' partials, in chunk order.
template <int S>
__global__ void column_finish_kernel(float* out0, float* out1, const float* partial,
                                     int64_t chunks, int64_t C) {
  const int64_t c = global_index();
  if (c >= C) return;
  float* outs[2] = {out0, out1};
  for (int k = 0; k < S; ++k) {
    float sum = 0.0f;
    for (int64_t j = 0; j < chunks; ++j) sum += partial[(k * chunks + j) * C + c];
    outs[k][c] += sum;
  }
}

unsigned columns_grid(int64_t C) { return static_cast<unsigned>((C + kBlock - 1) / kBlock); }

// out0[c] (and out1[c] when S = 2) += sum over rows i of f's values at (i, c).
template <int S, class F>
void column_sums(float* out0, float* out1, int64_t N, int64_t C, cudaStream_t s, F f) {
  const ColumnReductionGeometry g = column_reduction_geometry(N, C);
  if (g.row_chunks > 65535 || g.column_tiles > 2147483647)
    throw Error("column reduction of " + std::to_string(N) + " x " + std::to_string(C) +
                " exceeds the CUDA grid (at most 65535 chunks of " + std::to_string(kRowsPerChunk) + " rows)");
  StreamScratch scratch(static_cast<size_t>(g.partial_floats(C, S)) * sizeof(float), s);
  float* partial = scratch.as<float>();
  const dim3 grid(static_cast<unsigned>(g.column_tiles), static_cast<unsigned>(g.row_chunks));
  column_partials_kernel<S><<<grid, kBlock, 0, s>>>(partial, N, C, g.row_chunks, f);
  PX_CUDA_LAUNCH_CHECK();
  column_finish_kernel<S><<<columns_grid(C), kBlock, 0, s>>>(out0, out1, partial, g.row_chunks, C);
  PX_CUDA_LAUNCH_CHECK();
}

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
  column_sums<2>(dweight, dbias, N, C, s, [=] __device__(int64_t i, int64_t c, float* acc) {
    const float dy = to_float(dout[i * C + c]);
    acc[0] += (to_float(inp[i * C + c]) - mean[i]) * rstd[i] * dy;
    acc[1] += dy;
  });
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
  column_sums<1>(dweight, nullptr, N, C, s, [=] __device__(int64_t i, int64_t c, float* acc) {
    acc[0] += to_float(inp[i * C + c]) * rstd[i] * to_float(dout[i * C + c]);
  });
}

void bias_backward(float* dbias, const bf16* dout, int64_t N, int64_t C, cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  column_sums<1>(dbias, nullptr, N, C, s, [=] __device__(int64_t i, int64_t c, float* acc) {
    acc[0] += to_float(dout[i * C + c]);
  });
}

}  // namespace parallax::kernels::cuda
