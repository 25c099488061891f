// Rotary position embeddings: the frequency table (with Llama 3.1's scaling, as Hugging Face's
// _compute_llama3_parameters) and the in-place rotation of q or k heads, forward and inverse.
#include <cmath>
#include <numbers>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void rope_inv_freq(float* inv_freq, int64_t head_dim, double base, const RopeScaling& scaling) {
  const int64_t half = head_dim / 2;
  const double low_wavelen = scaling.original_max_position / scaling.low_freq_factor;
  const double high_wavelen = scaling.original_max_position / scaling.high_freq_factor;
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    if (scaling.factor > 0) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= scaling.factor;  // low frequencies: stretched
      } else if (wavelen >= high_wavelen) {
        const double smooth = (scaling.original_max_position / wavelen - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        f = (1.0 - smooth) * f / scaling.factor + smooth * f;
      }  // high frequencies: kept
    }
    inv_freq[i] = static_cast<float>(f);
  }
}

namespace {

// sign +1 rotates by the angle (forward), -1 by its negative (the transpose: backward).
void rotate(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
            const float* inv_freq, int64_t row0, int64_t T, float sign) {
  const int64_t half = head_dim / 2;
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const auto pos = static_cast<float>((row0 + r) % T);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      const float c = std::cos(angle), s = sign * std::sin(angle);
      for (int64_t h = 0; h < heads; ++h) {
        float* head = x + r * row_stride + h * head_dim;
        rope_rotate(head[i], head[i + half], c, s);
      }
    }
  }
}

}  // namespace

void rope_forward(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                  const float* inv_freq, int64_t row0, int64_t T) {
  rotate(x, rows, row_stride, heads, head_dim, inv_freq, row0, T, 1.0f);
}

void rope_backward(float* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                   const float* inv_freq, int64_t row0, int64_t T) {
  rotate(dx, rows, row_stride, heads, head_dim, inv_freq, row0, T, -1.0f);
}

}  // namespace parallax::kernels
