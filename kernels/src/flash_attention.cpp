// Causal attention without the (T, T) probability matrix: FlashAttention's online softmax (Dao et
// al. 2022, Algorithm 1; backward as FlashAttention-2, Dao 2023, Algorithm 2) on the CPU. Each
// query row walks its keys in blocks of kFlashKeyBlock, keeping a running maximum m, normaliser l
// and output accumulator rescaled by exp(m_old - m_new) per block; it stores out and the row's
// log-sum-exp L = m + log l, nothing of size T^2. Backward recomputes each probability as
// exp(s - L) and uses D = dout . out for the softmax's row term. Grouped-query attention as in
// attention.cpp; parallel over (batch, KV head) in backward so KV gradients are accumulated by one
// thread in a fixed order. Written once over query rows at given positions and key/value rows held
// apart (FlashRows); the fused-QKV entry points are the case of one tensor and positions 0..T-1.
#include <algorithm>
#include <cmath>
#include <vector>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void flash_attention_rows_forward(float* out, float* lse, const FlashRows& r) {
  const int64_t group = r.NH / r.KVH, C = r.NH * r.hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(r.hs));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.NH; ++h) {
      const int64_t g = h / group;
      std::vector<float> s(static_cast<size_t>(kFlashKeyBlock)), acc(static_cast<size_t>(r.hs));
      for (int64_t t = 0; t < r.Tq; ++t) {
        const float* q = r.q + (b * r.Tq + t) * r.q_stride + h * r.hs;
        const int64_t last = r.q_pos[t];
        float m = -INFINITY, norm = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 <= last; j0 += kFlashKeyBlock) {
          const int64_t j1 = std::min(j0 + kFlashKeyBlock, last + 1);
          float block_max = -INFINITY;
          for (int64_t t2 = j0; t2 < j1; ++t2) {
            const float* k = r.k + (b * r.Tk + t2) * r.kv_stride + g * r.hs;
            float dot = 0.0f;
            for (int64_t i = 0; i < r.hs; ++i) dot += q[i] * k[i];
            s[static_cast<size_t>(t2 - j0)] = dot * scale;
            block_max = std::max(block_max, dot * scale);
          }
          const float m_new = std::max(m, block_max);
          const float correction = std::exp(m - m_new);  // 0 on the first block (m = -inf)
          norm *= correction;
          for (auto& a : acc) a *= correction;
          for (int64_t t2 = j0; t2 < j1; ++t2) {
            const float p = std::exp(s[static_cast<size_t>(t2 - j0)] - m_new);
            norm += p;
            const float* v = r.v + (b * r.Tk + t2) * r.kv_stride + g * r.hs;
            for (int64_t i = 0; i < r.hs; ++i) acc[static_cast<size_t>(i)] += p * v[i];
          }
          m = m_new;
        }
        float* o = out + (b * r.Tq + t) * C + h * r.hs;
        for (int64_t i = 0; i < r.hs; ++i) o[i] = acc[static_cast<size_t>(i)] / norm;
        lse[(b * r.NH + h) * r.Tq + t] = m + std::log(norm);
      }
    }
}

void flash_attention_rows_backward(float* dq_base, float* dk_base, float* dv_base,
                                   const float* dout, const float* out, const float* lse,
                                   const FlashRows& r) {
  const int64_t group = r.NH / r.KVH, C = r.NH * r.hs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(r.hs));
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t g = 0; g < r.KVH; ++g)
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        for (int64_t t = 0; t < r.Tq; ++t) {
          const float* q = r.q + (b * r.Tq + t) * r.q_stride + h * r.hs;
          float* dq = dq_base + (b * r.Tq + t) * r.q_stride + h * r.hs;
          const float* dy = dout + (b * r.Tq + t) * C + h * r.hs;
          const float* o = out + (b * r.Tq + t) * C + h * r.hs;
          float D = 0.0f;  // sum_t2 p dp = dout . out
          for (int64_t i = 0; i < r.hs; ++i) D += dy[i] * o[i];
          const float L = lse[(b * r.NH + h) * r.Tq + t];
          for (int64_t t2 = 0; t2 <= r.q_pos[t]; ++t2) {
            const int64_t kv_row = (b * r.Tk + t2) * r.kv_stride + g * r.hs;
            const float* k = r.k + kv_row;
            const float* v = r.v + kv_row;
            float* dk = dk_base + kv_row;
            float* dv = dv_base + kv_row;
            float dot = 0.0f, dp = 0.0f;
            for (int64_t i = 0; i < r.hs; ++i) {
              dot += q[i] * k[i];
              dp += dy[i] * v[i];
            }
            const float p = std::exp(dot * scale - L);
            const float ds = softmax_dpre(p, dp, D, scale);
            for (int64_t i = 0; i < r.hs; ++i) {
              dv[i] += p * dy[i];
              dq[i] += ds * k[i];
              dk[i] += ds * q[i];
            }
          }
        }
}

namespace {

// The fused QKV activation (B, T, C + 2 KVH hs) as query and key/value rows of one sequence.
FlashRows fused_rows(const float* inp, const std::vector<int64_t>& positions, int64_t B, int64_t T,
                     int64_t C, int64_t NH, int64_t KVH) {
  const int64_t hs = C / NH, W = C + 2 * KVH * hs;
  return {inp, W, inp + C, inp + C + KVH * hs, W, positions.data(), B, T, T, NH, KVH, hs};
}

std::vector<int64_t> identity_positions(int64_t T) {
  std::vector<int64_t> p(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) p[static_cast<size_t>(t)] = t;
  return p;
}

}  // namespace

void flash_attention_forward(float* out, float* lse, const float* inp, int64_t B, int64_t T,
                             int64_t C, int64_t NH, int64_t KVH) {
  const std::vector<int64_t> pos = identity_positions(T);
  flash_attention_rows_forward(out, lse, fused_rows(inp, pos, B, T, C, NH, KVH));
}

void flash_attention_backward(float* dinp, const float* dout, const float* inp, const float* out,
                              const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                              int64_t KVH) {
  const std::vector<int64_t> pos = identity_positions(T);
  const int64_t KC = KVH * (C / NH);
  flash_attention_rows_backward(dinp, dinp + C, dinp + C + KC, dout, out, lse,
                                fused_rows(inp, pos, B, T, C, NH, KVH));
}

}  // namespace parallax::kernels
