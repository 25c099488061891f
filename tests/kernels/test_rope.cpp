// Rotary position embeddings against closed forms: the frequency table (RoFormer's base^(-2i/d)
// and Llama 3.1's scaling, derived by hand at one index of each band), the rotation of one pair,
// and the properties attention relies on: position 0 is the identity, norms are kept, q.k depends
// on the positions' difference only; backward against finite differences and as the inverse.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>
#include <vector>

#include "parallax/kernels/cpu.hpp"
#include "finite_differences.hpp"
#include "random_data.hpp"

namespace k = parallax::kernels;
using parallax::test::check_grad;
using parallax::test::randn;

TEST_CASE("RoPE frequencies: base^(-2i/d), and Llama 3.1's three bands", "[kernels][rope]") {
  std::vector<float> f(2);
  k::rope_inv_freq(f.data(), 4, 10000.0);
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == Approx(0.01).epsilon(1e-6));  // 10000^(-2/4)
  // Llama 3.1 (meta-llama/Llama-3.1-8B config.json): head_dim 128, rope_theta 500000, factor 8,
  // low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192, so wavelengths
  // above 8192 are stretched 8x and those below 2048 kept.
  const k::RopeScaling llama31{8, 1, 4, 8192};
  std::vector<float> plain(64), scaled(64);
  k::rope_inv_freq(plain.data(), 128, 500000.0);
  k::rope_inv_freq(scaled.data(), 128, 500000.0, llama31);
  CHECK(scaled[0] == plain[0]);  // wavelength 2 pi: kept
  // i = 63: 500000^(-126/128) = 2.45e-6, wavelength 2.6e6 > 8192: divided by 8.
  CHECK(plain[63] == Approx(std::pow(500000.0, -126.0 / 128.0)).epsilon(1e-6));
  CHECK(scaled[63] == Approx(plain[63] / 8.0).epsilon(1e-6));
  // i = 33: f = 500000^(-66/128) = 1.15204e-3, wavelength 2 pi / f = 5454.0, between 2048 and
  // 8192: smooth = (8192 / 5454.0 - 1) / (4 - 1) = 0.16734, f' = (1 - smooth) f / 8 + smooth f
  // = 0.27143 f.
  const double f33 = std::pow(500000.0, -66.0 / 128.0);
  CHECK(f33 == Approx(1.15204e-3).epsilon(1e-5));
  CHECK(scaled[33] == Approx(0.27143 * f33).epsilon(1e-4));
  // The bands are contiguous: kept below some index, stretched above another, smooth between.
  int kept = 0, stretched = 0;
  for (int i = 0; i < 64; ++i) {
    kept += scaled[i] == plain[i];
    stretched += std::abs(scaled[i] - plain[i] / 8.0f) <= 1e-6f * plain[i];
  }
  CHECK(kept > 0);
  CHECK(stretched > 0);
  CHECK(kept + stretched < 64);
}

TEST_CASE("RoPE rotates each pair by position x frequency", "[kernels][rope]") {
  // head_dim 2, one frequency of 1: (1, 0) at position p becomes (cos p, sin p).
  const float inv_freq = 1.0f;
  for (int p : {0, 1, 2, 5}) {
    std::vector<float> x = {1.0f, 0.0f};
    k::rope_forward(x.data(), 1, 2, 1, 2, &inv_freq, p, 100);
    CHECK(x[0] == Approx(std::cos(p)).margin(1e-6));
    CHECK(x[1] == Approx(std::sin(p)).margin(1e-6));
  }
  // Rotate-half pairing: in a head of 4, x[0] pairs with x[2] and x[1] with x[3].
  std::vector<float> f(2);
  k::rope_inv_freq(f.data(), 4, 10000.0);
  std::vector<float> x = {1.0f, 0.0f, 0.0f, 1.0f};
  k::rope_forward(x.data(), 1, 4, 1, 4, f.data(), 3, 100);
  CHECK(x[0] == Approx(std::cos(3.0)).margin(1e-6));
  CHECK(x[2] == Approx(std::sin(3.0)).margin(1e-6));
  CHECK(x[1] == Approx(-std::sin(0.03)).margin(1e-6));
  CHECK(x[3] == Approx(std::cos(0.03)).margin(1e-6));
}

TEST_CASE("RoPE: identity at position 0, norms kept, q.k depends on the offset only", "[kernels][rope]") {
  const int64_t hd = 16, heads = 3, T = 64;
  std::vector<float> f(hd / 2);
  k::rope_inv_freq(f.data(), hd, 10000.0);
  const auto x0 = randn(heads * hd, 1);
  auto x = x0;
  k::rope_forward(x.data(), 1, heads * hd, heads, hd, f.data(), 0, T);
  CHECK(x == x0);
  k::rope_forward(x.data(), 1, heads * hd, heads, hd, f.data(), 17, T);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < hd / 2; ++i) {
      const auto n = [&](const std::vector<float>& v) {
        const float a = v[h * hd + i], b = v[h * hd + i + hd / 2];
        return std::sqrt(a * a + b * b);
      };
      CHECK(n(x) == Approx(n(x0)).epsilon(1e-5));
    }
  const auto q = randn(hd, 2), kk = randn(hd, 3);
  auto score = [&](int pq, int pk) {
    auto a = q, b = kk;
    k::rope_forward(a.data(), 1, hd, 1, hd, f.data(), pq, T);
    k::rope_forward(b.data(), 1, hd, 1, hd, f.data(), pk, T);
    double s = 0;
    for (int64_t i = 0; i < hd; ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
  };
  CHECK(score(9, 4) == Approx(score(5, 0)).epsilon(1e-4));
  CHECK(score(30, 2) == Approx(score(40, 12)).epsilon(1e-4));
  CHECK(score(9, 4) != Approx(score(9, 5)).epsilon(1e-4));
}

TEST_CASE("RoPE backward is the inverse rotation and matches finite differences", "[kernels][rope]") {
  // Rows 5.. of a sequence of T = 4 wrap (row0 = 5: positions 1, 2, 3, 0, 1, 2), in a fused row
  // of q (2 heads) and more columns (row_stride 40 > 2 * 8).
  const int64_t rows = 6, stride = 40, heads = 2, hd = 8, T = 4, row0 = 5;
  std::vector<float> f(hd / 2);
  k::rope_inv_freq(f.data(), hd, 10.0);  // a small base: large angles at small positions
  auto x = randn(rows * stride, 4);
  const auto w = randn(rows * stride, 5);
  auto loss = [&] {
    auto y = x;
    k::rope_forward(y.data(), rows, stride, heads, hd, f.data(), row0, T);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * w[i];
    return s;
  };
  auto grad = w;  // dL/dy = w; backward gives dL/dx (columns outside the heads pass through)
  k::rope_backward(grad.data(), rows, stride, heads, hd, f.data(), row0, T);
  check_grad(x, grad, loss, 1e-3);
  auto y = x;
  k::rope_forward(y.data(), rows, stride, heads, hd, f.data(), row0, T);
  k::rope_backward(y.data(), rows, stride, heads, hd, f.data(), row0, T);
  for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == Approx(x[i]).margin(1e-5));
}
