// Element-wise ops: activations and residual adds; the math is in math.hpp (shared with CUDA).
#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void gelu_forward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) out[i] = gelu(inp[i]);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) dinp[i] += gelu_grad(inp[i]) * dout[i];
}

void swiglu_forward(float* out, const float* inp, int64_t N, int64_t F) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < F; ++j) out[i * F + j] = swiglu(inp[i * 2 * F + j], inp[i * 2 * F + F + j]);
}

void swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < F; ++j) {
      const float a = inp[i * 2 * F + j];
      const float b = inp[i * 2 * F + F + j];
      const float dy = dout[i * F + j];
      dinp[i * 2 * F + j] += silu_grad(a) * b * dy;
      dinp[i * 2 * F + F + j] += a * sigmoid(a) * dy;
    }
}

void residual_forward(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

double sum_squares(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

void scale_inplace(float* x, float s, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamW& h, int64_t t, bool decay) {
  const float c1 = 1.0f - std::pow(h.beta1, static_cast<float>(t));
  const float c2 = 1.0f - std::pow(h.beta2, static_cast<float>(t));
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) adamw_element(params[i], grads[i], m[i], v[i], h, c1, c2, decay);
}

}  // namespace parallax::kernels
