// The blocked online-softmax attention against the naive kernel (the oracle, which keeps the
// whole softmax): outputs, the rows' log-sum-exp (recomputed here in double from the scores) and
// every input gradient, for sequences that end mid-block, with and without grouped-query heads.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "parallax/kernels/cpu.hpp"
#include "random_data.hpp"

namespace k = parallax::kernels;
using parallax::test::randn;

namespace {

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0, r = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    e = std::max(e, std::abs(static_cast<double>(got[i]) - want[i]));
    r = std::max(r, std::abs(static_cast<double>(want[i])));
  }
  return e / r;
}

}  // namespace

TEST_CASE("flash attention equals the naive kernel, forward and backward", "[kernels][flash]") {
  struct Case { int64_t B, T, NH, KVH, hs; };
  for (const Case c : {Case{2, 150, 4, 2, 8}, Case{1, 64, 2, 2, 16}, Case{1, 129, 3, 1, 4}, Case{2, 7, 2, 2, 4}}) {
    INFO("B " << c.B << " T " << c.T << " NH " << c.NH << " KVH " << c.KVH << " hs " << c.hs);
    const int64_t C = c.NH * c.hs, C3 = C + 2 * c.KVH * c.hs, N = c.B * c.T;
    const auto x = randn(static_cast<size_t>(N * C3), 1, 1.5f);
    std::vector<float> out(N * C), att(c.B * c.NH * c.T * c.T), fout(N * C), lse(c.B * c.NH * c.T);
    k::attention_forward(out.data(), att.data(), x.data(), c.B, c.T, C, c.NH, c.KVH);
    k::flash_attention_forward(fout.data(), lse.data(), x.data(), c.B, c.T, C, c.NH, c.KVH);
    CHECK(rel_err(fout, out) <= 1e-5);
    // lse = log sum_{t2 <= t} exp(q.k / sqrt(hs)), in double.
    const int64_t group = c.NH / c.KVH;
    double lse_err = 0;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.NH; ++h)
        for (int64_t t = 0; t < c.T; ++t) {
          double sum = 0;
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            double dot = 0;
            for (int64_t i = 0; i < c.hs; ++i)
              dot += static_cast<double>(x[(b * c.T + t) * C3 + h * c.hs + i]) *
                     x[(b * c.T + t2) * C3 + C + (h / group) * c.hs + i];
            sum += std::exp(dot / std::sqrt(static_cast<double>(c.hs)));
          }
          lse_err = std::max(lse_err, std::abs(std::log(sum) - lse[(b * c.NH + h) * c.T + t]));
        }
    CHECK(lse_err <= 1e-5);
    const auto dy = randn(static_cast<size_t>(N * C), 2);
    std::vector<float> dx(N * C3, 0), fdx(N * C3, 0);
    k::attention_backward(dx.data(), dy.data(), x.data(), att.data(), c.B, c.T, C, c.NH, c.KVH);
    k::flash_attention_backward(fdx.data(), dy.data(), x.data(), fout.data(), lse.data(), c.B, c.T, C, c.NH, c.KVH);
    CHECK(rel_err(fdx, dx) <= 1e-5);
  }
}
