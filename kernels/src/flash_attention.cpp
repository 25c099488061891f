// Causal attention without the (T, T) probability matrix: FlashAttention's online softmax (Dao et
// al. 2022, Algorithm 1; backward as FlashAttention-2, Dao 2023, Algorithm 2) on the CPU. Each
// query row walks its keys in blocks of kFlashKeyBlock, keeping a running maximum m, normaliser l
// and output accumulator rescaled by exp(m_old - m_new) per block; it stores out and the row's
// log-sum-exp L = m + log l, nothing of size T^2. Backward recomputes each probability as
// exp(s - L) and uses D = dout . out for the softmax's row term. Grouped-query attention as in
// attention.cpp; parallel over (batch, KV head) in backward so KV gradients are accumulated by one
// thread in a fixed order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

namespace {

struct Layout {
  int64_t hs, KC, C3, group;
  float scale;
  Layout(int64_t C, int64_t NH, int64_t KVH)
      : hs(C / NH), KC(KVH * (C / NH)), C3(C + 2 * KVH * (C / NH)), group(NH / KVH),
        scale(1.0f / std::sqrt(static_cast<float>(C / NH))) {}
};

}  // namespace

void flash_attention_forward(float* out, float* lse, const float* inp, int64_t B, int64_t T,
                             int64_t C, int64_t NH, int64_t KVH) {
  const Layout l(C, NH, KVH);
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h) {
      const int64_t g = h / l.group;
      std::vector<float> s(static_cast<size_t>(kFlashKeyBlock)), acc(static_cast<size_t>(l.hs));
      for (int64_t t = 0; t < T; ++t) {
        const float* q = inp + (b * T + t) * l.C3 + h * l.hs;
        float m = -INFINITY, norm = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 <= t; j0 += kFlashKeyBlock) {
          const int64_t j1 = std::min(j0 + kFlashKeyBlock, t + 1);
          float block_max = -INFINITY;
          for (int64_t t2 = j0; t2 < j1; ++t2) {
            const float* k = inp + (b * T + t2) * l.C3 + C + g * l.hs;
            float dot = 0.0f;
            for (int64_t i = 0; i < l.hs; ++i) dot += q[i] * k[i];
            s[static_cast<size_t>(t2 - j0)] = dot * l.scale;
            block_max = std::max(block_max, dot * l.scale);
          }
          const float m_new = std::max(m, block_max);
          const float correction = std::exp(m - m_new);  // 0 on the first block (m = -inf)
          norm *= correction;
          for (auto& a : acc) a *= correction;
          for (int64_t t2 = j0; t2 < j1; ++t2) {
            const float p = std::exp(s[static_cast<size_t>(t2 - j0)] - m_new);
            norm += p;
            const float* v = inp + (b * T + t2) * l.C3 + C + l.KC + g * l.hs;
            for (int64_t i = 0; i < l.hs; ++i) acc[static_cast<size_t>(i)] += p * v[i];
          }
          m = m_new;
        }
        float* o = out + (b * T + t) * C + h * l.hs;
        for (int64_t i = 0; i < l.hs; ++i) o[i] = acc[static_cast<size_t>(i)] / norm;
        lse[(b * NH + h) * T + t] = m + std::log(norm);
      }
    }
}

void flash_attention_backward(float* dinp, const float* dout, const float* inp, const float* out,
                              const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                              int64_t KVH) {
  const Layout l(C, NH, KVH);
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < KVH; ++g)
      for (int64_t h = g * l.group; h < (g + 1) * l.group; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const float* q = inp + (b * T + t) * l.C3 + h * l.hs;
          float* dq = dinp + (b * T + t) * l.C3 + h * l.hs;
          const float* dy = dout + (b * T + t) * C + h * l.hs;
          const float* o = out + (b * T + t) * C + h * l.hs;
          float D = 0.0f;  // sum_t2 p dp = dout . out
          for (int64_t i = 0; i < l.hs; ++i) D += dy[i] * o[i];
          const float L = lse[(b * NH + h) * T + t];
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            const float* k = inp + (b * T + t2) * l.C3 + C + g * l.hs;
            const float* v = inp + (b * T + t2) * l.C3 + C + l.KC + g * l.hs;
            float* dk = dinp + (b * T + t2) * l.C3 + C + g * l.hs;
            float* dv = dinp + (b * T + t2) * l.C3 + C + l.KC + g * l.hs;
            float dot = 0.0f, dp = 0.0f;
            for (int64_t i = 0; i < l.hs; ++i) {
              dot += q[i] * k[i];
              dp += dy[i] * v[i];
            }
            const float p = std::exp(dot * l.scale - L);
            const float ds = softmax_dpre(p, dp, D, l.scale);
            for (int64_t i = 0; i < l.hs; ++i) {
              dv[i] += p * dy[i];
              dq[i] += ds * k[i];
              dk[i] += ds * q[i];
            }
          }
        }
}

}  // namespace parallax::kernels
