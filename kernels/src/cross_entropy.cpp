// Vocab-parallel cross-entropy (Megatron-LM's three reductions), fused with its backward.
#include <cmath>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void crossentropy_local_max(float* maxes, const float* logits, int64_t N, int64_t V_local,
                            int64_t valid) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    float m = -INFINITY;
    for (int64_t j = 0; j < valid; ++j) m = std::fmax(m, logits[i * V_local + j]);
    maxes[i] = m;
  }
}

void crossentropy_local_sums(float* sums, float* target, const float* logits, const float* maxes,
                             const int32_t* targets, int64_t vocab_start, int64_t N,
                             int64_t V_local, int64_t valid) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    float s = 0.0f;
    for (int64_t j = 0; j < valid; ++j) s += std::exp(logits[i * V_local + j] - maxes[i]);
    sums[i] = s;
    const int64_t col = static_cast<int64_t>(targets[i]) - vocab_start;
    target[i] = (col >= 0 && col < valid) ? logits[i * V_local + col] : 0.0f;
  }
}

void crossentropy_finish(float* losses, float* logits, const float* maxes, const float* sums,
                         const float* target, const int32_t* targets, int64_t vocab_start,
                         float dloss, int64_t N, int64_t V_local, int64_t valid) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    losses[i] = std::log(sums[i]) + maxes[i] - target[i];
    const float inv = 1.0f / sums[i];
    const int64_t col = static_cast<int64_t>(targets[i]) - vocab_start;
    float* l = logits + i * V_local;
    for (int64_t j = 0; j < V_local; ++j) {
      if (j >= valid) {
        l[j] = 0.0f;
        continue;
      }
      const float p = std::exp(l[j] - maxes[i]) * inv;
      l[j] = crossentropy_dlogit(p, j == col, dloss);
    }
  }
}

}  // namespace parallax::kernels
