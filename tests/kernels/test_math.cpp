// The element-wise math both backends compile (kernels/include/parallax/kernels/math.hpp): the
// bf16 conversions against an independent reference rounding, and the shared forward/backward
// formulas against closed forms and finite differences. The CPU kernels call the same inline
// functions (test_kernels.cpp checks them op by op); the CUDA kernels call them too.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "parallax/kernels/math.hpp"

namespace k = parallax::kernels;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Reference: the two bf16 neighbours of f (truncation and one step away from zero), compared
// by exact distance in double; a tie goes to the one with an even last mantissa bit. A step
// past the largest finite bf16 counts as 2^128 (where the next value would be), which is what
// makes overflow round to infinity exactly when IEEE round-to-nearest-even does.
uint16_t reference_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN, same sign
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t lo = u & 0xffff0000u;
  if (lo == u) return static_cast<uint16_t>(u >> 16);
  const uint32_t hi = lo + 0x10000u;
  const double x = f, a = from_bits(lo);
  const bool hi_is_inf = (hi & 0x7fffffffu) == 0x7f800000u;
  const double b = hi_is_inf ? std::copysign(std::ldexp(1.0, 128), x) : static_cast<double>(from_bits(hi));
  const double da = std::abs(x - a), db = std::abs(b - x);
  if (da < db) return static_cast<uint16_t>(lo >> 16);
  if (db < da) return static_cast<uint16_t>(hi >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1u) == 0 ? lo >> 16 : hi >> 16);
}

}  // namespace

TEST_CASE("bf16 rounding equals the reference round-to-nearest-even", "[kernels][bf16]") {
  std::vector<uint32_t> cases = {
      0x00000000u, 0x80000000u,              // +-0
      0x00000001u, 0x00008000u, 0x00018000u,  // subnormals, ties in the subnormal range
      0x3f800000u, 0x3f808000u, 0x3f818000u,  // 1, tie to even (down), tie to even (up)
      0x3f807fffu, 0x3f808001u,               // just below / above a tie
      0x7f7f0000u, 0x7f7f7fffu, 0x7f7f8000u,  // largest bf16; below its half step; tie -> inf
      0x7f7fffffu, 0xff7fffffu,               // largest float rounds to +-inf
      0x7f800000u, 0xff800000u,               // +-inf
      0x7fc00000u, 0xffc00001u, 0x7f800001u,  // quiet NaNs, a signalling NaN
  };
  std::mt19937 gen(7);
  for (int i = 0; i < 1000000; ++i) cases.push_back(static_cast<uint32_t>(gen()));
  int64_t mismatches = 0;
  for (uint32_t u : cases) {
    const float f = from_bits(u);
    const uint16_t got = k::to_bf16(f).bits;
    const uint16_t want = reference_bf16(f);
    if (got != want) {
      if (++mismatches <= 5) FAIL_CHECK("bits " << std::hex << u << ": got " << got << " want " << want);
    }
  }
  CHECK(mismatches == 0);
  // NaN stays NaN (never rounds into infinity), and the round trip is exact on bf16 values.
  CHECK(std::isnan(k::to_float(k::to_bf16(from_bits(0x7f800001u)))));
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const k::bf16 b{static_cast<uint16_t>(h)};
    const float f = k::to_float(b);
    if (!std::isnan(f)) REQUIRE(k::to_bf16(f).bits == h);
  }
  CHECK(k::to_float(k::to_bf16(1.0f + 1.0f / 256)) == 1.0f);  // tie (1 + 2^-8): to even, down
  CHECK(k::from_float<float>(0.3f) == 0.3f);
  CHECK(k::from_float<k::bf16>(0.3f).bits == k::to_bf16(0.3f).bits);
}

TEST_CASE("shared element-wise forward and backward formulas", "[kernels]") {
  // GeLU and SiLU derivatives against central differences in double.
  for (float x = -6.0f; x <= 6.0f; x += 0.37f) {
    const double h = 1e-3;
    const double num_gelu = (k::gelu(static_cast<float>(x + h)) - k::gelu(static_cast<float>(x - h))) / (2 * h);
    CHECK(k::gelu_grad(x) == Approx(num_gelu).margin(2e-3));
    auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
    CHECK(k::silu_grad(x) == Approx((silu(x + h) - silu(x - h)) / (2 * h)).margin(1e-4));
    CHECK(k::swiglu(x, 2.0f) == Approx(2.0 * silu(x)).epsilon(1e-5));
  }
  // Softmax backward: for p = softmax(s * z), dz = p * (dp - sum(p * dp)) * s.
  const std::vector<float> z = {0.3f, -1.2f, 2.0f, 0.1f}, dp = {0.5f, -0.25f, 1.0f, 2.0f};
  const float scale = 0.5f;
  auto softmax = [&](const std::vector<float>& v) {
    std::vector<double> p(v.size());
    double m = -1e30, s = 0;
    for (float x : v) m = std::max(m, static_cast<double>(x) * scale);
    for (size_t i = 0; i < v.size(); ++i) s += p[i] = std::exp(v[i] * scale - m);
    for (auto& x : p) x /= s;
    return p;
  };
  const auto p = softmax(z);
  double weighted = 0;
  for (size_t i = 0; i < p.size(); ++i) weighted += p[i] * dp[i];
  for (size_t i = 0; i < z.size(); ++i) {
    auto zp = z, zm = z;
    zp[i] += 1e-3f;
    zm[i] -= 1e-3f;
    double up = 0, down = 0;
    const auto pp = softmax(zp), pm = softmax(zm);
    for (size_t j = 0; j < z.size(); ++j) {
      up += pp[j] * dp[j];
      down += pm[j] * dp[j];
    }
    const double num = (up - down) / (zp[i] - zm[i]);
    CHECK(k::softmax_dpre(static_cast<float>(p[i]), dp[i], static_cast<float>(weighted), scale) ==
          Approx(num).margin(1e-4));
  }
  CHECK(k::crossentropy_dlogit(0.25f, true, 2.0f) == -1.5f);
  CHECK(k::crossentropy_dlogit(0.25f, false, 2.0f) == 0.5f);
  // AdamW element at step 1 (bias corrections 1 - beta): closed form.
  k::AdamW h;
  h.lr = 0.1f;
  h.weight_decay = 0.0f;
  float param = 1.0f, m = 0.0f, v = 0.0f;
  k::adamw_element(param, 0.5f, m, v, h, 1.0f - h.beta1, 1.0f - h.beta2, false);
  CHECK(param == Approx(1.0 - 0.1 * 0.5 / (0.5 + 1e-8)));
}
