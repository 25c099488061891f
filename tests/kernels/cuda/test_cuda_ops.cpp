// Every CUDA op against the CPU kernel on the same inputs (rounded to bf16 first, so only the
// computation differs), by normalised error max|gpu - cpu| / max|cpu| with a threshold per op.
// Needs a CUDA device: ctest label gpu, run by scripts/test-gpu (PARALLAX_GPU_TESTS=ON).
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <vector>

#include "parallax/kernels/cpu.hpp"
#include "parallax/kernels/cuda/blas.hpp"
#include "parallax/kernels/cuda/check.hpp"
#include "parallax/kernels/cuda/device.hpp"
#include "parallax/kernels/cuda/ops.hpp"

namespace k = parallax::kernels;
namespace cu = parallax::kernels::cuda;
using k::bf16;

namespace {

template <class T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<T>& h) : n(h.size()) {
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), sizeof(T) * std::max<size_t>(n, 1)));
    PX_CUDA(cudaMemcpy(p, h.data(), sizeof(T) * n, cudaMemcpyHostToDevice));
  }
  explicit Dev(size_t count) : n(count) {
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), sizeof(T) * std::max<size_t>(n, 1)));
    PX_CUDA(cudaMemset(p, 0, sizeof(T) * std::max<size_t>(n, 1)));
  }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    PX_CUDA(cudaDeviceSynchronize());
    std::vector<T> h(n);
    PX_CUDA(cudaMemcpy(h.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<float> randn(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = k::to_float(k::to_bf16(d(gen)));  // exactly representable in bf16
  return v;
}
std::vector<bf16> b16(const std::vector<float>& x) {
  std::vector<bf16> o(x.size());
  for (size_t i = 0; i < x.size(); ++i) o[i] = k::to_bf16(x[i]);
  return o;
}
std::vector<float> f32(const std::vector<bf16>& x) {
  std::vector<float> o(x.size());
  for (size_t i = 0; i < x.size(); ++i) o[i] = k::to_float(x[i]);
  return o;
}
double nerr(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double e = 0, r = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    e = std::max(e, std::abs(static_cast<double>(got[i]) - want[i]));
    r = std::max(r, std::abs(static_cast<double>(want[i])));
  }
  return e / std::max(r, 1e-30);
}
#define CHECK_NERR(got, want, tol)                        \
  do {                                                    \
    const double e_ = nerr(got, want);                    \
    INFO(#got << ": normalised error " << e_ << " (threshold " << tol << ")"); \
    CHECK(e_ <= (tol));                                   \
  } while (0)

struct Gpu {
  cudaStream_t s = nullptr;
  std::unique_ptr<cu::Blas> blas;
  Gpu() {
    std::string why;
    REQUIRE(cu::device_count(&why) > 0);  // label gpu: this binary is run on a GPU machine only
    PX_CUDA(cudaSetDevice(0));
    PX_CUDA(cudaStreamCreate(&s));
    blas = std::make_unique<cu::Blas>(s);
  }
  ~Gpu() {
    blas.reset();
    cudaStreamDestroy(s);
  }
};

}  // namespace

TEST_CASE("cuda: casts are the shared rounding", "[gpu]") {
  Gpu g;
  const auto x = randn(1000, 1, 10.0f);
  std::vector<float> raw(x);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] += 1e-3f * static_cast<float>(i % 7);  // not bf16-exact
  Dev<float> in(raw);
  Dev<bf16> out(raw.size());
  cu::cast_to_bf16(out.p, in.p, static_cast<int64_t>(raw.size()), g.s);
  const auto got = out.get();
  for (size_t i = 0; i < raw.size(); ++i) REQUIRE(got[i].bits == k::to_bf16(raw[i]).bits);
  Dev<float> back(raw.size());
  cu::cast_to_float(back.p, out.p, static_cast<int64_t>(raw.size()), g.s);
  CHECK(back.get() == f32(got));
}

TEST_CASE("cuda: matmul forward and backward against BLAS", "[gpu]") {
  Gpu g;
  const int64_t N = 64, C = 96, OC = 80;
  const auto inp = randn(N * C, 1), w = randn(OC * C, 2), b = randn(OC, 3), dout = randn(N * OC, 4, 0.1f);
  Dev<bf16> d_inp(b16(inp)), d_w(b16(w)), d_b(b16(b)), d_out(static_cast<size_t>(N * OC)), d_dout(b16(dout));
  cu::matmul_forward(*g.blas, d_out.p, d_inp.p, d_w.p, d_b.p, N, C, OC);
  std::vector<float> want(N * OC);
  k::matmul_forward(want.data(), inp.data(), w.data(), b.data(), N, C, OC);
  CHECK_NERR(f32(d_out.get()), want, 1e-2);
  Dev<bf16> d_dinp(static_cast<size_t>(N * C));
  Dev<float> d_dw(static_cast<size_t>(OC * C)), d_db(static_cast<size_t>(OC));
  cu::matmul_backward(*g.blas, d_dinp.p, d_dw.p, d_db.p, d_dout.p, d_inp.p, d_w.p, N, C, OC);
  std::vector<float> dinp(N * C, 0), dw(OC * C, 0), db(OC, 0);
  k::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C, OC);
  CHECK_NERR(f32(d_dinp.get()), dinp, 1e-2);
  CHECK_NERR(d_dw.get(), dw, 1e-3);
  CHECK_NERR(d_db.get(), db, 1e-4);
}

TEST_CASE("cuda: layernorm and rmsnorm forward and backward", "[gpu]") {
  Gpu g;
  const int64_t N = 37, C = 200;
  const auto x = randn(N * C, 1), w = randn(C, 2), b = randn(C, 3), dy = randn(N * C, 4);
  Dev<bf16> d_x(b16(x)), d_w(b16(w)), d_b(b16(b)), d_dy(b16(dy)), d_y(static_cast<size_t>(N * C));
  Dev<float> d_mean(static_cast<size_t>(N)), d_rstd(static_cast<size_t>(N));
  std::vector<float> y(N * C), mean(N), rstd(N);
  SECTION("layernorm") {
    cu::layernorm_forward(d_y.p, d_mean.p, d_rstd.p, d_x.p, d_w.p, d_b.p, N, C, g.s);
    k::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    CHECK_NERR(f32(d_y.get()), y, 1e-2);
    CHECK_NERR(d_mean.get(), mean, 1e-5);
    CHECK_NERR(d_rstd.get(), rstd, 1e-5);
    Dev<bf16> d_dx(static_cast<size_t>(N * C));
    Dev<float> d_dw(static_cast<size_t>(C)), d_db(static_cast<size_t>(C));
    cu::layernorm_backward(d_dx.p, d_dw.p, d_db.p, d_dy.p, d_x.p, d_w.p, d_mean.p, d_rstd.p, N, C, g.s);
    std::vector<float> dx(N * C, 0), dw(C, 0), db(C, 0);
    k::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
    CHECK_NERR(f32(d_dx.get()), dx, 2e-2);
    CHECK_NERR(d_dw.get(), dw, 1e-4);
    CHECK_NERR(d_db.get(), db, 1e-4);
  }
  SECTION("rmsnorm") {
    cu::rmsnorm_forward(d_y.p, d_rstd.p, d_x.p, d_w.p, N, C, g.s);
    k::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C);
    CHECK_NERR(f32(d_y.get()), y, 1e-2);
    CHECK_NERR(d_rstd.get(), rstd, 1e-5);
    Dev<bf16> d_dx(static_cast<size_t>(N * C));
    Dev<float> d_dw(static_cast<size_t>(C));
    cu::rmsnorm_backward(d_dx.p, d_dw.p, d_dy.p, d_x.p, d_w.p, d_rstd.p, N, C, g.s);
    std::vector<float> dx(N * C, 0), dw(C, 0);
    k::rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
    CHECK_NERR(f32(d_dx.get()), dx, 2e-2);
    CHECK_NERR(d_dw.get(), dw, 1e-4);
  }
}

TEST_CASE("cuda: causal attention forward and backward", "[gpu]") {
  Gpu g;
  const int64_t B = 2, T = 33, C = 48;
  for (const auto& [NH, KVH] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}, {4, 1}}) {
    CAPTURE(NH, KVH);
    const int64_t W = cu::attention_qkv_width(C, NH, KVH);
    const auto qkv = randn(B * T * W, 1), dy = randn(B * T * C, 2);
    Dev<bf16> d_qkv(b16(qkv)), d_dy(b16(dy)), d_out(static_cast<size_t>(B * T * C)),
        d_att(static_cast<size_t>(B * NH * T * T)), d_dqkv(qkv.size());
    Dev<char> ws(cu::attention_workspace_bytes(B, T, NH));
    cu::attention_forward(*g.blas, d_out.p, d_att.p, d_qkv.p, ws.p, B, T, C, NH, KVH);
    std::vector<float> out(B * T * C), att(B * NH * T * T), dqkv(qkv.size(), 0);
    k::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, KVH);
    CHECK_NERR(f32(d_att.get()), att, 1e-2);
    CHECK_NERR(f32(d_out.get()), out, 2e-2);
    cu::attention_backward(*g.blas, d_dqkv.p, d_dy.p, d_qkv.p, d_att.p, ws.p, B, T, C, NH, KVH);
    k::attention_backward(dqkv.data(), dy.data(), qkv.data(), att.data(), B, T, C, NH, KVH);
    CHECK_NERR(f32(d_dqkv.get()), dqkv, 3e-2);
  }
}

TEST_CASE("cuda: element-wise activations, residual, bias", "[gpu]") {
  Gpu g;
  const int64_t N = 50, F = 64;
  const auto x = randn(N * 2 * F, 1, 2.0f), dy = randn(N * 2 * F, 2), r = randn(N * 2 * F, 3);
  Dev<bf16> d_x(b16(x)), d_dy(b16(dy)), d_r(b16(r)), d_y(x.size()), d_dx(x.size());
  std::vector<float> y(x.size()), dx(x.size(), 0);
  const auto n = static_cast<int64_t>(x.size());
  cu::gelu_forward(d_y.p, d_x.p, n, g.s);
  k::gelu_forward(y.data(), x.data(), n);
  CHECK_NERR(f32(d_y.get()), y, 1e-2);
  cu::gelu_backward(d_dx.p, d_x.p, d_dy.p, n, g.s);
  k::gelu_backward(dx.data(), x.data(), dy.data(), n);
  CHECK_NERR(f32(d_dx.get()), dx, 1e-2);
  Dev<bf16> d_s(static_cast<size_t>(N * F)), d_ds(x.size());
  std::vector<float> s(N * F), ds(x.size(), 0);
  cu::swiglu_forward(d_s.p, d_x.p, N, F, g.s);
  k::swiglu_forward(s.data(), x.data(), N, F);
  CHECK_NERR(f32(d_s.get()), s, 1e-2);
  cu::swiglu_backward(d_ds.p, d_x.p, d_dy.p, N, F, g.s);  // dout (N, F): the first N*F of dy
  k::swiglu_backward(ds.data(), x.data(), dy.data(), N, F);
  CHECK_NERR(f32(d_ds.get()), ds, 1e-2);
  cu::residual_forward(d_y.p, d_x.p, d_r.p, n, g.s);
  k::residual_forward(y.data(), x.data(), r.data(), n);
  CHECK_NERR(f32(d_y.get()), y, 1e-2);
  cu::bias_forward(d_y.p, d_r.p, N, 2 * F, g.s);  // bias = first 2F of r
  k::bias_forward(y.data(), r.data(), N, 2 * F);
  CHECK_NERR(f32(d_y.get()), y, 1e-2);
  Dev<float> d_db(static_cast<size_t>(2 * F));
  std::vector<float> db(2 * F, 0);
  cu::bias_backward(d_db.p, d_dy.p, N, 2 * F, g.s);
  k::bias_backward(db.data(), dy.data(), N, 2 * F);
  CHECK_NERR(d_db.get(), db, 1e-5);
}

TEST_CASE("cuda: vocab-parallel embedding and positions", "[gpu]") {
  Gpu g;
  const int64_t V = 20, C = 16, B = 2, T = 6, N = B * T;
  const auto wte = randn(V * C, 1), wpe = randn(T * C, 2), dy = randn(N * C, 3);
  std::vector<int32_t> tok = {0, 3, 19, 7, 7, 12, 3, 3, 5, 10, 11, 19};
  Dev<bf16> d_wte(b16(wte)), d_wpe(b16(wpe)), d_dy(b16(dy)), d_out(static_cast<size_t>(N * C));
  Dev<int32_t> d_tok(tok);
  cu::embedding_forward(d_out.p, d_tok.p, d_wte.p + 10 * C, 10, 10, N, C, g.s);  // shard rows 10..19
  std::vector<float> out(N * C);
  k::embedding_forward(out.data(), tok.data(), wte.data() + 10 * C, 10, 10, N, C);
  CHECK(f32(d_out.get()) == out);
  cu::position_forward_rows(d_out.p, d_wpe.p, 3, N - 3, T, C, g.s);
  k::position_forward_rows(out.data(), wpe.data(), 3, N - 3, T, C);
  CHECK_NERR(f32(d_out.get()), out, 1e-2);
  // The backward passes add in token (row) order onto the existing gradient, as the CPU
  // kernels do: the same fp32 additions in the same order, so the same bits.
  Dev<float> d_dwte(randn(V * C, 4)), d_dwpe(static_cast<size_t>(T * C));
  std::vector<float> dwte = randn(V * C, 4), dwpe(T * C, 0);
  cu::embedding_backward(d_dwte.p, d_dy.p, d_tok.p, 0, V, N, C, g.s);
  k::embedding_backward(dwte.data(), dy.data(), tok.data(), 0, V, N, C);
  CHECK(d_dwte.get() == dwte);
  cu::embedding_backward(d_dwte.p + 10 * C, d_dy.p, d_tok.p, 10, 10, N, C, g.s);  // rows 10..19
  k::embedding_backward(dwte.data() + 10 * C, dy.data(), tok.data(), 10, 10, N, C);
  CHECK(d_dwte.get() == dwte);
  cu::position_backward_rows(d_dwpe.p, d_dy.p, 3, N - 3, T, C, g.s);
  k::position_backward_rows(dwpe.data(), dy.data(), 3, N - 3, T, C);
  CHECK(d_dwpe.get() == dwpe);
}

TEST_CASE("cuda: embedding backward with many repeated tokens equals the CPU bit for bit", "[gpu]") {
  Gpu g;
  const int64_t V = 300, C = 96, N = 4096;
  std::mt19937 gen(7);
  std::vector<int32_t> tok(static_cast<size_t>(N));
  for (auto& t : tok) t = static_cast<int32_t>(gen() % 2 == 0 ? gen() % 5 : gen() % V);  // runs of up to ~800
  const auto dy = randn(N * C, 8);
  Dev<bf16> d_dy(b16(dy));
  Dev<int32_t> d_tok(tok);
  Dev<float> d_dwte(static_cast<size_t>(V * C));
  std::vector<float> dwte(V * C, 0);
  cu::embedding_backward(d_dwte.p, d_dy.p, d_tok.p, 0, V, N, C, g.s);
  k::embedding_backward(dwte.data(), dy.data(), tok.data(), 0, V, N, C);
  CHECK(d_dwte.get() == dwte);
}

TEST_CASE("cuda: column reductions over several row chunks and column tiles, the same bits twice",
          "[gpu]") {
  // 1000 rows = 3 full chunks of 256 and a ragged one; 70 columns = 2 full tiles of 32 and a
  // ragged one (reduction_geometry.hpp). Against the CPU at fp32 summation-order tolerance, and
  // run twice from the same start: the same bits (no atomics).
  Gpu g;
  const int64_t N = 1000, C = 70;
  const auto x = randn(N * C, 1), w = randn(C, 2), dy = randn(N * C, 4);
  Dev<bf16> d_x(b16(x)), d_w(b16(w)), d_b(b16(randn(C, 3))), d_dy(b16(dy)), d_y(static_cast<size_t>(N * C));
  Dev<float> d_mean(static_cast<size_t>(N)), d_rstd(static_cast<size_t>(N));
  cu::layernorm_forward(d_y.p, d_mean.p, d_rstd.p, d_x.p, d_w.p, d_b.p, N, C, g.s);
  const auto mean = d_mean.get(), rstd = d_rstd.get();
  auto twice = [&](auto&& run) {
    Dev<float> a(static_cast<size_t>(2 * C)), b(static_cast<size_t>(2 * C));
    run(a.p);
    run(b.p);
    const auto first = a.get();
    CHECK(first == b.get());
    return first;
  };
  Dev<bf16> d_dx(static_cast<size_t>(N * C));
  const auto ln = twice([&](float* out) {
    cu::layernorm_backward(d_dx.p, out, out + C, d_dy.p, d_x.p, d_w.p, d_mean.p, d_rstd.p, N, C, g.s);
  });
  std::vector<float> dx(N * C, 0), dw(C, 0), db(C, 0);
  k::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  CHECK_NERR(std::vector<float>(ln.begin(), ln.begin() + C), dw, 1e-5);
  CHECK_NERR(std::vector<float>(ln.begin() + C, ln.end()), db, 1e-5);
  const auto rms = twice([&](float* out) {
    cu::rmsnorm_backward(d_dx.p, out, d_dy.p, d_x.p, d_w.p, d_rstd.p, N, C, g.s);
  });
  std::vector<float> rdw(C, 0);
  k::rmsnorm_backward(dx.data(), rdw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
  CHECK_NERR(std::vector<float>(rms.begin(), rms.begin() + C), rdw, 1e-5);
  const auto bias = twice([&](float* out) { cu::bias_backward(out, d_dy.p, N, C, g.s); });
  std::vector<float> bdb(C, 0);
  k::bias_backward(bdb.data(), dy.data(), N, C);
  CHECK_NERR(std::vector<float>(bias.begin(), bias.begin() + C), bdb, 1e-5);
}

TEST_CASE("cuda: the gradient norm's sum of squares over many blocks, the same bits twice", "[gpu]") {
  Gpu g;
  const int64_t n = 3'000'001;  // 1024 blocks of pass 1, a ragged end
  const auto x = randn(n, 9);
  Dev<float> d_x(x);
  Dev<double> acc(static_cast<size_t>(2));
  cu::sum_squares_add(acc.p, d_x.p, n, g.s);
  cu::sum_squares_add(acc.p + 1, d_x.p, n, g.s);
  const auto sums = acc.get();
  CHECK(sums[0] == sums[1]);
  CHECK(sums[0] == Approx(k::sum_squares(x.data(), n)).epsilon(1e-12));
}

TEST_CASE("cuda: vocab-parallel cross-entropy", "[gpu]") {
  Gpu g;
  const int64_t N = 9, V = 300, valid = 290, vstart = 300;
  const auto logits = randn(N * V, 1, 3.0f);
  std::vector<int32_t> targets = {300, 589, 10, 450, 320, 301, 599, 400, 0};
  Dev<bf16> d_l(b16(logits));
  Dev<int32_t> d_t(targets);
  Dev<float> d_max(static_cast<size_t>(N)), d_sum(static_cast<size_t>(N)), d_tg(static_cast<size_t>(N)), d_loss(static_cast<size_t>(N));
  std::vector<float> l(logits), mx(N), sm(N), tg(N), loss(N);
  cu::crossentropy_local_max(d_max.p, d_l.p, N, V, valid, g.s);
  k::crossentropy_local_max(mx.data(), l.data(), N, V, valid);
  CHECK(d_max.get() == mx);
  cu::crossentropy_local_sums(d_sum.p, d_tg.p, d_l.p, d_max.p, d_t.p, vstart, N, V, valid, g.s);
  k::crossentropy_local_sums(sm.data(), tg.data(), l.data(), mx.data(), targets.data(), vstart, N, V, valid);
  CHECK_NERR(d_sum.get(), sm, 1e-5);
  CHECK(d_tg.get() == tg);
  cu::crossentropy_finish(d_loss.p, d_l.p, d_max.p, d_sum.p, d_tg.p, d_t.p, vstart, 0.125f, N, V, valid, g.s);
  k::crossentropy_finish(loss.data(), l.data(), mx.data(), sm.data(), tg.data(), targets.data(), vstart, 0.125f, N, V, valid);
  CHECK_NERR(d_loss.get(), loss, 1e-5);
  CHECK_NERR(f32(d_l.get()), l, 1e-2);
}

TEST_CASE("cuda: AdamW, clipping and the double sums of the step", "[gpu]") {
  Gpu g;
  const int64_t n = 5000;
  auto master = randn(n, 1), grads = randn(n, 2, 0.1f), m = randn(n, 3, 0.01f), v = randn(n, 4, 0.01f);
  for (auto& x : v) x = std::abs(x);
  Dev<float> d_master(master), d_grads(grads), d_m(m), d_v(v);
  Dev<bf16> d_params(static_cast<size_t>(n));
  k::AdamW h;
  cu::adamw_update(d_master.p, d_params.p, d_grads.p, d_m.p, d_v.p, n, h, 7, true, g.s);
  k::adamw_update(master.data(), grads.data(), m.data(), v.data(), n, h, 7, true);
  CHECK_NERR(d_master.get(), master, 1e-6);
  CHECK_NERR(d_m.get(), m, 1e-6);
  CHECK_NERR(d_v.get(), v, 1e-6);
  const auto params = d_params.get();
  const auto got_master = d_master.get();
  for (int64_t i = 0; i < n; ++i) REQUIRE(params[static_cast<size_t>(i)].bits == k::to_bf16(got_master[static_cast<size_t>(i)]).bits);
  Dev<double> acc(static_cast<size_t>(2));
  cu::sum_squares_add(acc.p, d_grads.p, n, g.s);
  cu::loss_add(acc.p + 1, d_grads.p, n, 0.5f, g.s);
  const auto sums = acc.get();
  double ss = k::sum_squares(grads.data(), n), ls = 0;
  for (float x : grads) ls += x;
  CHECK(sums[0] == Approx(ss).epsilon(1e-9));
  CHECK(sums[1] == Approx(ls * 0.5).epsilon(1e-9).margin(1e-9));
  cu::clip_scale(d_grads.p, n, acc.p, 0.5f, g.s);
  const double norm = std::sqrt(ss);
  if (norm > 0.5) k::scale_inplace(grads.data(), static_cast<float>(0.5 / (norm + 1e-6)), n);
  CHECK_NERR(d_grads.get(), grads, 1e-6);
  Dev<float> a(randn(100, 5)), b(randn(100, 6));
  cu::tied_sum(a.p, b.p, 100, g.s);
  CHECK(a.get() == b.get());
}

TEST_CASE("cuda: rotary position embeddings forward and backward", "[gpu]") {
  Gpu g;
  // 10 rows of a fused row 40 wide, q's 2 heads of 8 at its start; positions wrap at T = 4.
  const int64_t rows = 10, stride = 40, heads = 2, hd = 8, T = 4, row0 = 5;
  std::vector<float> f(hd / 2);
  k::rope_inv_freq(f.data(), hd, 10.0, k::RopeScaling{8, 1, 4, 16});
  const auto x = randn(rows * stride, 1);
  Dev<bf16> d_x(b16(x));
  Dev<float> d_f(f);
  auto y = x;
  cu::rope_forward(d_x.p, rows, stride, heads, hd, d_f.p, row0, T, g.s);
  k::rope_forward(y.data(), rows, stride, heads, hd, f.data(), row0, T);
  CHECK_NERR(f32(d_x.get()), y, 1e-2);
  cu::rope_backward(d_x.p, rows, stride, heads, hd, d_f.p, row0, T, g.s);
  k::rope_backward(y.data(), rows, stride, heads, hd, f.data(), row0, T);
  CHECK_NERR(f32(d_x.get()), y, 1e-2);
}
