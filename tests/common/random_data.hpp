#pragma once
// Seeded random test data shared by the kernel tests (CPU and CUDA compare on the same inputs).
#include <cstddef>
#include <random>
#include <vector>

namespace parallax::test {

// n samples of N(0, scale^2) from a fixed seed.
inline std::vector<float> randn(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

}  // namespace parallax::test
