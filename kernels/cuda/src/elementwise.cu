// Element-wise kernels: casts, activations, residuals, biases, AdamW, clipping.
// Per-element math is kernels/math.hpp's (the CPU kernels' functions, compiled __host__
// __device__); activations are read and written as bf16 and computed in fp32.
#include <cmath>

#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::kernels::cuda {

using namespace detail;

void cast_to_bf16(bf16* out, const float* in, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) { out[i] = to_bf16(in[i]); });
}

void cast_to_float(float* out, const bf16* in, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) { out[i] = to_float(in[i]); });
}

void bias_forward(bf16* out, const bf16* bias, int64_t N, int64_t C, cudaStream_t s) {
  for_each(N * C, s, [=] __device__(int64_t i) {
    out[i] = to_bf16(to_float(out[i]) + to_float(bias[i % C]));
  });
}

void gelu_forward(bf16* out, const bf16* inp, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) { out[i] = to_bf16(gelu(to_float(inp[i]))); });
}

void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) {
    dinp[i] = to_bf16(to_float(dinp[i]) + gelu_grad(to_float(inp[i])) * to_float(dout[i]));
  });
}

void swiglu_forward(bf16* out, const bf16* inp, int64_t N, int64_t F, cudaStream_t s) {
  for_each(N * F, s, [=] __device__(int64_t e) {
    const int64_t i = e / F, j = e % F;
    out[e] = to_bf16(swiglu(to_float(inp[i * 2 * F + j]), to_float(inp[i * 2 * F + F + j])));
  });
}

void swiglu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t N, int64_t F,
                     cudaStream_t s) {
  for_each(N * F, s, [=] __device__(int64_t e) {
    const int64_t i = e / F, j = e % F;
    const float a = to_float(inp[i * 2 * F + j]);
    const float b = to_float(inp[i * 2 * F + F + j]);
    const float dy = to_float(dout[e]);
    bf16& da = dinp[i * 2 * F + j];
    bf16& db = dinp[i * 2 * F + F + j];
    da = to_bf16(to_float(da) + silu_grad(a) * b * dy);
    db = to_bf16(to_float(db) + a * sigmoid(a) * dy);
  });
}

void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) { out[i] = to_bf16(to_float(a[i]) + to_float(b[i])); });
}

void adamw_update(float* master, bf16* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamW& h, int64_t t, bool decay, cudaStream_t s) {
  // The bias corrections exactly as the CPU kernel computes them (float pow on the host).
  const float c1 = 1.0f - std::pow(h.beta1, static_cast<float>(t));
  const float c2 = 1.0f - std::pow(h.beta2, static_cast<float>(t));
  const AdamW hh = h;
  for_each(n, s, [=] __device__(int64_t i) {
    adamw_element(master[i], grads[i], m[i], v[i], hh, c1, c2, decay);
    params[i] = to_bf16(master[i]);
  });
}

void clip_scale(float* x, int64_t n, const double* norm_sq, float clip, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) {
    const double norm = sqrt(*norm_sq);
    if (clip > 0 && norm > clip) x[i] *= static_cast<float>(clip / (norm + 1e-6));
  });
}

void tied_sum(float* a, float* b, int64_t n, cudaStream_t s) {
  for_each(n, s, [=] __device__(int64_t i) { b[i] = a[i] = a[i] + b[i]; });
}

}  // namespace parallax::kernels::cuda
