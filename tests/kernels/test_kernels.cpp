// Every kernel against an independent oracle: BLAS GEMM against the naive triple loop; every
// backward against central finite differences of L = sum(out * R) for a random R; cross-entropy
// and AdamW against closed forms.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "parallax/kernels/cpu.hpp"
#include "finite_differences.hpp"
#include "random_data.hpp"

namespace k = parallax::kernels;

namespace {

using parallax::test::check_grad;
using parallax::test::randn;

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

TEST_CASE("BLAS matmul equals the naive GEMM", "[kernels]") {
  const int64_t N = 37, C = 29, OC = 41;
  auto inp = randn(N * C, 1), w = randn(OC * C, 2), b = randn(OC, 3);
  std::vector<float> fast(N * OC), slow(N * OC);
  k::matmul_forward(fast.data(), inp.data(), w.data(), b.data(), N, C, OC);
  k::matmul_forward_naive(slow.data(), inp.data(), w.data(), b.data(), N, C, OC);
  for (size_t i = 0; i < fast.size(); ++i) CHECK(fast[i] == Approx(slow[i]).margin(1e-4));
}

TEST_CASE("matmul backward matches finite differences", "[kernels]") {
  const int64_t N = 5, C = 4, OC = 3;
  auto inp = randn(N * C, 1), w = randn(OC * C, 2), b = randn(OC, 3), R = randn(N * OC, 4);
  std::vector<float> out(N * OC);
  auto loss = [&] {
    k::matmul_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
    return dot(out, R);
  };
  std::vector<float> dinp(N * C, 0), dw(OC * C, 0), db(OC, 0);
  k::matmul_backward(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), N, C, OC);
  check_grad(inp, dinp, loss);
  check_grad(w, dw, loss);
  check_grad(b, db, loss);
}

TEST_CASE("layernorm and rmsnorm backward match finite differences", "[kernels]") {
  const int64_t N = 4, C = 8;
  auto inp = randn(N * C, 1), w = randn(C, 2), b = randn(C, 3), R = randn(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  SECTION("layernorm") {
    auto loss = [&] {
      k::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
      return dot(out, R);
    };
    loss();
    std::vector<float> dinp(N * C, 0), dw(C, 0), db(C, 0);
    k::layernorm_backward(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(),
                          mean.data(), rstd.data(), N, C);
    check_grad(inp, dinp, loss);
    check_grad(w, dw, loss);
    check_grad(b, db, loss);
  }
  SECTION("rmsnorm") {
    auto loss = [&] {
      k::rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C);
      return dot(out, R);
    };
    loss();
    std::vector<float> dinp(N * C, 0), dw(C, 0);
    k::rmsnorm_backward(dinp.data(), dw.data(), R.data(), inp.data(), w.data(), rstd.data(), N, C);
    check_grad(inp, dinp, loss);
    check_grad(w, dw, loss);
  }
}

TEST_CASE("causal attention: rows are causal softmaxes and backward matches finite differences",
          "[kernels]") {
  const int64_t B = 2, T = 5, C = 8, NH = 2;
  auto qkv = randn(B * T * 3 * C, 1), R = randn(B * T * C, 2);
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  auto loss = [&] {
    k::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return dot(out, R);
  };
  loss();
  for (int64_t r = 0; r < B * NH * T; ++r) {
    const int64_t t = r % T;
    double s = 0;
    for (int64_t t2 = 0; t2 < T; ++t2) {
      if (t2 > t) CHECK(att[r * T + t2] == 0.0f);
      s += att[r * T + t2];
    }
    CHECK(s == Approx(1.0).epsilon(1e-5));
  }
  std::vector<float> dqkv(qkv.size(), 0);
  k::attention_backward(dqkv.data(), R.data(), qkv.data(), att.data(), B, T, C, NH);
  check_grad(qkv, dqkv, loss);
}

TEST_CASE("GeLU and SwiGLU backward match finite differences", "[kernels]") {
  const int64_t N = 3, F = 4;
  SECTION("gelu") {
    auto x = randn(N * F, 1, 2.0f), R = randn(N * F, 2);
    std::vector<float> out(N * F);
    auto loss = [&] {
      k::gelu_forward(out.data(), x.data(), N * F);
      return dot(out, R);
    };
    std::vector<float> dx(N * F, 0);
    k::gelu_backward(dx.data(), x.data(), R.data(), N * F);
    check_grad(x, dx, loss, 1e-2, 1e-3f);
  }
  SECTION("swiglu") {
    auto x = randn(N * 2 * F, 1, 2.0f), R = randn(N * F, 2);
    std::vector<float> out(N * F);
    auto loss = [&] {
      k::swiglu_forward(out.data(), x.data(), N, F);
      return dot(out, R);
    };
    std::vector<float> dx(N * 2 * F, 0);
    k::swiglu_backward(dx.data(), x.data(), R.data(), N, F);
    check_grad(x, dx, loss, 1e-2, 1e-3f);
  }
}

TEST_CASE("embedding split over two vocab shards sums to the full lookup", "[kernels]") {
  const int64_t V = 10, C = 3, N = 6, B = 2, T = 3;
  auto wte = randn(V * C, 1), wpe = randn(T * C, 2), R = randn(N * C, 3);
  std::vector<int32_t> tok = {0, 9, 4, 5, 4, 1};
  std::vector<float> a(N * C), b(N * C);
  k::embedding_forward(a.data(), tok.data(), wte.data(), 0, 5, N, C);
  k::embedding_forward(b.data(), tok.data(), wte.data() + 5 * C, 5, 5, N, C);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c)
      CHECK(a[i * C + c] + b[i * C + c] == wte[tok[i] * C + c]);
  // Backward: each row receives the sum of dout over the positions holding its token.
  std::vector<float> dwte(V * C, 0), dwpe(T * C, 0);
  k::embedding_backward(dwte.data(), R.data(), tok.data(), 0, 10, N, C);
  CHECK(dwte[4 * C + 1] == Approx(R[2 * C + 1] + R[4 * C + 1]));
  CHECK(dwte[7 * C] == 0.0f);
  k::position_backward(dwpe.data(), R.data(), B, T, C);
  CHECK(dwpe[1 * C + 2] == Approx(R[1 * C + 2] + R[(T + 1) * C + 2]));
}

TEST_CASE("vocab-parallel cross-entropy equals the closed form, split or not", "[kernels]") {
  const int64_t N = 3, V = 8, valid = 7;  // one padded column
  auto logits = randn(N * V, 1, 3.0f);
  std::vector<int32_t> targets = {2, 6, 0};
  const float dloss = 0.25f;
  // Closed form in double.
  std::vector<double> ref_loss(N);
  for (int64_t i = 0; i < N; ++i) {
    double m = -1e30, s = 0;
    for (int64_t j = 0; j < valid; ++j) m = std::max(m, static_cast<double>(logits[i * V + j]));
    for (int64_t j = 0; j < valid; ++j) s += std::exp(logits[i * V + j] - m);
    ref_loss[i] = std::log(s) + m - logits[i * V + targets[i]];
  }
  // Two shards of 4 columns, combined as the TP all-reduces would.
  std::vector<float> shard[2], mx[2], sm[2], tg[2], ls[2];
  for (int r = 0; r < 2; ++r) {
    shard[r].resize(N * 4);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < 4; ++j) shard[r][i * 4 + j] = logits[i * V + r * 4 + j];
    mx[r].resize(N);
    k::crossentropy_local_max(mx[r].data(), shard[r].data(), N, 4, r == 0 ? 4 : 3);
  }
  std::vector<float> m(N), s(N, 0), t(N, 0);
  for (int64_t i = 0; i < N; ++i) m[i] = std::max(mx[0][i], mx[1][i]);
  for (int r = 0; r < 2; ++r) {
    sm[r].resize(N);
    tg[r].resize(N);
    k::crossentropy_local_sums(sm[r].data(), tg[r].data(), shard[r].data(), m.data(),
                               targets.data(), r * 4, N, 4, r == 0 ? 4 : 3);
    for (int64_t i = 0; i < N; ++i) {
      s[i] += sm[r][i];
      t[i] += tg[r][i];
    }
  }
  for (int r = 0; r < 2; ++r) {
    ls[r].resize(N);
    k::crossentropy_finish(ls[r].data(), shard[r].data(), m.data(), s.data(), t.data(),
                           targets.data(), r * 4, dloss, N, 4, r == 0 ? 4 : 3);
  }
  for (int64_t i = 0; i < N; ++i) {
    CHECK(ls[0][i] == Approx(ref_loss[i]).epsilon(1e-5));
    double grad_sum = 0;
    for (int r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 4; ++j) grad_sum += shard[r][i * 4 + j];
    CHECK(grad_sum == Approx(0.0).margin(1e-6));  // softmax minus one-hot sums to zero
    CHECK(shard[1][i * 4 + 3] == 0.0f);           // padding column
    const double p_target = std::exp(-ref_loss[i]);
    const int32_t tt = targets[i];
    CHECK(shard[tt / 4][i * 4 + tt % 4] == Approx((p_target - 1.0) * dloss).epsilon(1e-4));
  }
}

TEST_CASE("AdamW first step equals the closed form", "[kernels]") {
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, -0.25f}, m = {0, 0}, v = {0, 0};
  k::AdamW h;
  h.lr = 0.1f;
  h.weight_decay = 0.01f;
  k::adamw_update(p.data(), g.data(), m.data(), v.data(), 2, h, 1, true);
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * (sign(g) * |g|/(|g|+eps) + wd * p).
  CHECK(p[0] == Approx(1.0 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1.0)));
  CHECK(p[1] == Approx(-2.0 - 0.1 * (-0.25 / (0.25 + 1e-8) + 0.01 * -2.0)));
}

TEST_CASE("tanh_fast equals std::tanh within a few float ulps", "[kernels]") {
  double worst = 0;
  for (int i = -20000; i <= 20000; ++i) {
    const float x = static_cast<float>(i) * 1e-3f;
    worst = std::max(worst, std::abs(static_cast<double>(k::tanh_fast(x)) - std::tanh(static_cast<double>(x))));
  }
  INFO("max abs error " << worst);
  CHECK(worst < 5e-7);  // a few float ulps near +-1
}
