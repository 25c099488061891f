// Rotary position embeddings: one thread per (row, head, pair), the CPU kernel's angle
// (position * inv_freq in fp32) and kernels/math.hpp's rope_rotate; bf16 in and out.
#include <cmath>

#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::kernels::cuda {

using namespace detail;

namespace {

void rotate(bf16* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
            const float* inv_freq, int64_t row0, int64_t T, float sign, cudaStream_t s) {
  const int64_t half = head_dim / 2;
  for_each(rows * heads * half, s, [=] __device__(int64_t e) {
    const int64_t i = e % half, h = (e / half) % heads, r = e / (half * heads);
    const float angle = static_cast<float>((row0 + r) % T) * inv_freq[i];
    float a = to_float(x[r * row_stride + h * head_dim + i]);
    float b = to_float(x[r * row_stride + h * head_dim + i + half]);
    rope_rotate(a, b, cosf(angle), sign * sinf(angle));
    x[r * row_stride + h * head_dim + i] = to_bf16(a);
    x[r * row_stride + h * head_dim + i + half] = to_bf16(b);
  });
}

}  // namespace

void rope_forward(bf16* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                  const float* inv_freq, int64_t row0, int64_t T, cudaStream_t s) {
  rotate(x, rows, row_stride, heads, head_dim, inv_freq, row0, T, 1.0f, s);
}

void rope_backward(bf16* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                   const float* inv_freq, int64_t row0, int64_t T, cudaStream_t s) {
  rotate(dx, rows, row_stride, heads, head_dim, inv_freq, row0, T, -1.0f, s);
}

}  // namespace parallax::kernels::cuda
