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

TEST_CASE("context parallelism: each rank's load-balanced chunks against the whole K/V equal "
          "the full attention", "[kernels][flash][cp]") {
  // cp 2 over T 40: chunks of 10; rank r holds chunks r and 3 - r (positions [10r, 10r + 10) and
  // [30 - 10r, 40 - 10r)), attends the gathered keys and values, and the ranks' key/value
  // gradients sum to the full ones.
  const int64_t B = 2, T = 40, NH = 4, KVH = 2, hs = 8, cp = 2, c = T / (2 * cp);
  const int64_t C = NH * hs, KC = KVH * hs, W = C + 2 * KC, N = B * T;
  const auto x = randn(static_cast<size_t>(N * W), 3, 1.5f);
  const auto dy = randn(static_cast<size_t>(N * C), 4);
  std::vector<float> out(N * C), lse(B * NH * T), dx(N * W, 0.0f);
  k::flash_attention_forward(out.data(), lse.data(), x.data(), B, T, C, NH, KVH);
  k::flash_attention_backward(dx.data(), dy.data(), x.data(), out.data(), lse.data(), B, T, C, NH, KVH);
  std::vector<float> dkv(N * W, 0.0f);  // the ranks' k and v gradients, summed
  const int64_t Tq = 2 * c;
  for (int64_t r = 0; r < cp; ++r) {
    std::vector<int64_t> pos;
    for (int64_t chunk : {r, 2 * cp - 1 - r})
      for (int64_t i = 0; i < c; ++i) pos.push_back(chunk * c + i);
    std::vector<float> q(B * Tq * C), dyl(B * Tq * C);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < Tq; ++t)
        for (int64_t i = 0; i < C; ++i) {
          q[(b * Tq + t) * C + i] = x[(b * T + pos[t]) * W + i];
          dyl[(b * Tq + t) * C + i] = dy[(b * T + pos[t]) * C + i];
        }
    const k::FlashRows rows{q.data(), C, x.data() + C, x.data() + C + KC, W, pos.data(),
                            B, Tq, T, NH, KVH, hs};
    std::vector<float> o(B * Tq * C), l(B * NH * Tq), dq(B * Tq * C, 0.0f);
    k::flash_attention_rows_forward(o.data(), l.data(), rows);
    k::flash_attention_rows_backward(dq.data(), dkv.data() + C, dkv.data() + C + KC, dyl.data(),
                                     o.data(), l.data(), rows);
    double err = 0, dq_err = 0, ref = 0, dq_ref = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < Tq; ++t) {
        for (int64_t i = 0; i < C; ++i) {
          err = std::max(err, std::abs(static_cast<double>(o[(b * Tq + t) * C + i]) - out[(b * T + pos[t]) * C + i]));
          ref = std::max(ref, std::abs(static_cast<double>(out[(b * T + pos[t]) * C + i])));
          dq_err = std::max(dq_err, std::abs(static_cast<double>(dq[(b * Tq + t) * C + i]) - dx[(b * T + pos[t]) * W + i]));
          dq_ref = std::max(dq_ref, std::abs(static_cast<double>(dx[(b * T + pos[t]) * W + i])));
        }
        for (int64_t h = 0; h < NH; ++h)
          CHECK(l[(b * NH + h) * Tq + t] == Approx(lse[(b * NH + h) * T + pos[t]]).epsilon(1e-6));
      }
    INFO("rank " << r);
    CHECK(err <= 1e-6 * ref);
    CHECK(dq_err <= 1e-5 * dq_ref);
  }
  double kv_err = 0, kv_ref = 0;
  for (int64_t row = 0; row < N; ++row)
    for (int64_t i = C; i < W; ++i) {
      kv_err = std::max(kv_err, std::abs(static_cast<double>(dkv[row * W + i]) - dx[row * W + i]));
      kv_ref = std::max(kv_ref, std::abs(static_cast<double>(dx[row * W + i])));
    }
  CHECK(kv_err <= 1e-5 * kv_ref);
}
