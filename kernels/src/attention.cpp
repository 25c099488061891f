// Causal softmax attention (llm.c's loops) with grouped-query attention: query head h reads KV
// head h / (NH / KVH). Parallel over (batch, KV head) pairs, the group's query heads in order, so
// that the key and value gradients of one KV head are accumulated by one thread in a fixed order.
#include <cmath>
#include <vector>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void attention_forward(float* out, float* att, const float* inp, int64_t B, int64_t T, int64_t C,
                       int64_t NH) {
  attention_forward(out, att, inp, B, T, C, NH, NH);
}

void attention_backward(float* dinp, const float* dout, const float* inp, const float* att,
                        int64_t B, int64_t T, int64_t C, int64_t NH) {
  attention_backward(dinp, dout, inp, att, B, T, C, NH, NH);
}

void attention_forward(float* out, float* att, const float* inp, int64_t B, int64_t T, int64_t C,
                       int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH;
  const int64_t KC = KVH * hs;    // width of k (and of v)
  const int64_t C3 = C + 2 * KC;  // q, k, v
  const int64_t group = NH / KVH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t g = h / group;
        const float* q = inp + b * T * C3 + t * C3 + h * hs;
        float* a = att + b * NH * T * T + h * T * T + t * T;
        float maxval = -INFINITY;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* k = inp + b * T * C3 + t2 * C3 + C + g * hs;
          float dot = 0.0f;
          for (int64_t i = 0; i < hs; ++i) dot += q[i] * k[i];
          dot *= scale;
          a[t2] = dot;
          if (dot > maxval) maxval = dot;
        }
        float sum = 0.0f;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          a[t2] = std::exp(a[t2] - maxval);
          sum += a[t2];
        }
        const float inv = 1.0f / sum;
        for (int64_t t2 = 0; t2 < T; ++t2) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
        float* o = out + b * T * C + t * C + h * hs;
        for (int64_t i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const float* v = inp + b * T * C3 + t2 * C3 + C + KC + g * hs;
          for (int64_t i = 0; i < hs; ++i) o[i] += a[t2] * v[i];
        }
      }
}

void attention_backward(float* dinp, const float* dout, const float* inp, const float* att,
                        int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH;
  const int64_t KC = KVH * hs;
  const int64_t C3 = C + 2 * KC;
  const int64_t group = NH / KVH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < KVH; ++g) {
      std::vector<float> datt(static_cast<size_t>(T));
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const float* a = att + b * NH * T * T + h * T * T + t * T;
          const float* dy = dout + b * T * C + t * C + h * hs;
          const float* q = inp + b * T * C3 + t * C3 + h * hs;
          float* dq = dinp + b * T * C3 + t * C3 + h * hs;
          // out = sum_t2 a[t2] v[t2]
          float weighted = 0.0f;
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            const float* v = inp + b * T * C3 + t2 * C3 + C + KC + g * hs;
            float* dv = dinp + b * T * C3 + t2 * C3 + C + KC + g * hs;
            float d = 0.0f;
            for (int64_t i = 0; i < hs; ++i) {
              d += v[i] * dy[i];
              dv[i] += a[t2] * dy[i];
            }
            datt[static_cast<size_t>(t2)] = d;
            weighted += a[t2] * d;
          }
          // softmax backward, then the scaled dot product
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            const float dpre = softmax_dpre(a[t2], datt[static_cast<size_t>(t2)], weighted, scale);
            const float* k = inp + b * T * C3 + t2 * C3 + C + g * hs;
            float* dk = dinp + b * T * C3 + t2 * C3 + C + g * hs;
            for (int64_t i = 0; i < hs; ++i) {
              dq[i] += dpre * k[i];
              dk[i] += dpre * q[i];
            }
          }
        }
    }
}

}  // namespace parallax::kernels
