#pragma once
// Element-wise math shared by the CPU and CUDA backends (one definition, docs/design.md §8).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "parallax/kernels/hd.hpp"

namespace parallax::kernels {

// The epsilon of LayerNorm and RMSNorm on every backend (GPT-2's layer_norm_epsilon; an HF export's
// config.json records it).
inline constexpr float kNormEps = 1e-5f;

// tanh as Eigen's rational approximation (generic_fast_tanh_float: 13/6 polynomial ratio,
// clamped where float tanh is +-1): branch-free multiply-adds that compilers vectorise, unlike
// libm's tanhf; a test checks it against std::tanh.
PX_HD inline float tanh_fast(float x) {
  const float clamp = 7.90531110763549805f;
  x = x > clamp ? clamp : (x < -clamp ? -clamp : x);
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}

// One rotary pair (a, b) rotated by the angle whose cosine and sine are c and s.
PX_HD inline void rope_rotate(float& a, float& b, float c, float s) {
  const float x = a, y = b;
  a = x * c - y * s;
  b = x * s + y * c;
}

// GPT-2's tanh approximation of GeLU and its derivative.
PX_HD inline float gelu(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  const float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanh_fast(k * (x + cube)));
}
PX_HD inline float gelu_grad(float x) {
  const float k = 0.7978845608028654f;
  const float cube = 0.044715f * x * x * x;
  const float th = tanh_fast(k * (x + cube));
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

// bfloat16 storage (the CUDA backend's weights and activations): the upper 16 bits of an IEEE
// float, same layout as CUDA's __nv_bfloat16. Conversions are ours, so the CPU tests cover the
// exact rounding the GPU kernels use.
struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2, "bf16 is 2 bytes, as NCCL and cuBLAS read it");

PX_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

PX_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

// fp32 -> bf16, round to nearest, ties to even (what __float2bfloat16_rn does). NaN stays a
// (quiet) NaN of the same sign; values past the largest bf16 round to infinity.
PX_HD inline bf16 to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>(u >> 16)};
}

PX_HD inline float to_float(bf16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }
// Identity overloads, so a kernel templated on its storage type reads and writes both.
PX_HD inline float to_float(float f) { return f; }
template <class T>
PX_HD inline T from_float(float f);
template <>
PX_HD inline float from_float<float>(float f) { return f; }
template <>
PX_HD inline bf16 from_float<bf16>(float f) { return to_bf16(f); }

// Row-wise formulas shared by both backends' norm, softmax and cross-entropy kernels.
// LayerNorm backward of one element: dnorm = weight * dout, norm = (x - mean) * rstd, and the
// row means of dnorm and dnorm * norm.
PX_HD inline float layernorm_dinp(float dnorm, float norm, float dnorm_mean,
                                  float dnorm_norm_mean, float rstd) {
  return (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd;
}
// RMSNorm backward of one element; k = rstd^3 / C * sum(w * dy * x) over the row.
PX_HD inline float rmsnorm_dinp(float x, float w, float dy, float rstd, float k) {
  return rstd * w * dy - x * k;
}
// Softmax backward of one (causal) score: a the probability, da its gradient, weighted =
// sum over the row of a * da; scale is the 1/sqrt(head size) applied before the softmax.
PX_HD inline float softmax_dpre(float a, float da, float weighted, float scale) {
  return a * (da - weighted) * scale;
}
// Cross-entropy gradient of one logit: (softmax - onehot) * dloss.
PX_HD inline float crossentropy_dlogit(float p, bool is_target, float dloss) {
  return (p - (is_target ? 1.0f : 0.0f)) * dloss;
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
