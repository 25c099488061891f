#pragma once
// Element-wise math shared by the CPU and CUDA backends (one definition, DESIGN.md §8).
#include <cmath>

#include "parallax/kernels/hd.hpp"

namespace parallax::kernels {

// GPT-2's tanh approximation of GeLU and its derivative.
PX_HD inline float gelu(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  const float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanhf(k * (x + cube)));
}
PX_HD inline float gelu_grad(float x) {
  const float k = 0.7978845608028654f;
  const float cube = 0.044715f * x * x * x;
  const float th = tanhf(k * (x + cube));
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * k * (1.0f + 3.0f * 0.044715f * x * x);
}

PX_HD inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// SwiGLU: out = silu(a) * b.
PX_HD inline float swiglu(float a, float b) { return a * sigmoid(a) * b; }
PX_HD inline float silu_grad(float a) {
  const float s = sigmoid(a);
  return s * (1.0f + a * (1.0f - s));
}

struct AdamW {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

// One AdamW update of one element at step t (1-based), decoupled weight decay.
PX_HD inline void adamw_element(float& param, float grad, float& m, float& v, const AdamW& h,
                                float beta1_correction, float beta2_correction, bool decay) {
  m = h.beta1 * m + (1.0f - h.beta1) * grad;
  v = h.beta2 * v + (1.0f - h.beta2) * grad * grad;
  const float m_hat = m / beta1_correction;
  const float v_hat = v / beta2_correction;
  const float wd = decay ? h.weight_decay : 0.0f;
  param -= h.lr * (m_hat / (sqrtf(v_hat) + h.eps) + wd * param);
}

}  // namespace parallax::kernels
