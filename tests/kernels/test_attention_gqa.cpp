// Grouped-query attention is multi-head attention with each KV head repeated for its group of
// query heads (Ainslie et al. 2023): forward equal to the MHA kernel on the repeated input bit
// for bit; backward's query gradient equal, its KV gradients the sums of the repeated heads'
// gradients; and against finite differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "parallax/kernels/cpu.hpp"
#include "finite_differences.hpp"
#include "random_data.hpp"

namespace k = parallax::kernels;
using parallax::test::check_grad;
using parallax::test::randn;

namespace {

constexpr int64_t B = 2, T = 5, NH = 4, KVH = 2, hs = 3, C = NH * hs, KC = KVH * hs;
constexpr int64_t C3g = C + 2 * KC, C3m = 3 * C, group = NH / KVH;

// The MHA input: q as is, KV head h / group copied to head h.
std::vector<float> repeat_kv(const std::vector<float>& gqa) {
  std::vector<float> mha(B * T * C3m);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < hs; ++i) {
        const int64_t g = h / group;
        mha[r * C3m + h * hs + i] = gqa[r * C3g + h * hs + i];
        mha[r * C3m + C + h * hs + i] = gqa[r * C3g + C + g * hs + i];
        mha[r * C3m + 2 * C + h * hs + i] = gqa[r * C3g + C + KC + g * hs + i];
      }
  return mha;
}

}  // namespace

TEST_CASE("GQA equals MHA on KV heads repeated over their groups", "[kernels][gqa]") {
  const auto x = randn(B * T * C3g, 1);
  const auto xm = repeat_kv(x);
  std::vector<float> out(B * T * C), att(B * NH * T * T), out_m(B * T * C), att_m(B * NH * T * T);
  k::attention_forward(out.data(), att.data(), x.data(), B, T, C, NH, KVH);
  k::attention_forward(out_m.data(), att_m.data(), xm.data(), B, T, C, NH);
  CHECK(out == out_m);
  CHECK(att == att_m);

  const auto dy = randn(B * T * C, 2);
  std::vector<float> dx(B * T * C3g, 0), dx_m(B * T * C3m, 0);
  k::attention_backward(dx.data(), dy.data(), x.data(), att.data(), B, T, C, NH, KVH);
  k::attention_backward(dx_m.data(), dy.data(), xm.data(), att_m.data(), B, T, C, NH);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t i = 0; i < C; ++i) CHECK(dx[r * C3g + i] == dx_m[r * C3m + i]);  // dq
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t g = 0; g < KVH; ++g)
      for (int64_t i = 0; i < hs; ++i) {
        double dk = 0, dv = 0;
        for (int64_t h = g * group; h < (g + 1) * group; ++h) {
          dk += dx_m[r * C3m + C + h * hs + i];
          dv += dx_m[r * C3m + 2 * C + h * hs + i];
        }
        CHECK(dx[r * C3g + C + g * hs + i] == Approx(dk).margin(1e-6));
        CHECK(dx[r * C3g + C + KC + g * hs + i] == Approx(dv).margin(1e-6));
      }
}

TEST_CASE("GQA backward matches finite differences", "[kernels][gqa]") {
  auto x = randn(B * T * C3g, 3);
  const auto w = randn(B * T * C, 4);
  auto loss = [&] {
    std::vector<float> out(B * T * C), att(B * NH * T * T);
    k::attention_forward(out.data(), att.data(), x.data(), B, T, C, NH, KVH);
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * w[i];
    return s;
  };
  std::vector<float> out(B * T * C), att(B * NH * T * T), dx(B * T * C3g, 0);
  k::attention_forward(out.data(), att.data(), x.data(), B, T, C, NH, KVH);
  k::attention_backward(dx.data(), w.data(), x.data(), att.data(), B, T, C, NH, KVH);
  check_grad(x, dx, loss);
}
