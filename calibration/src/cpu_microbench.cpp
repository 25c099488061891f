#include "parallax/calibration/cpu_microbench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallax/calibration/linear_shapes.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/executor/comm/comm.hpp"
#include "parallax/executor/recorder.hpp"
#include "parallax/kernels/cpu.hpp"

namespace parallax::calib {

namespace k = parallax::kernels;

namespace {

using Clock = std::chrono::steady_clock;

// Evicts caches between timed calls (as a training step does: every kernel's data was last
// touched by other kernels) by writing `bytes` of scratch: twice the last-level cache for a cold
// call, twice the private cache for one that finds its data in the last level.
void flush_caches(BenchScratch& s, size_t bytes) {
  std::vector<char>& scratch = s.flush;
  if (scratch.size() < bytes) scratch.resize(bytes);
  for (size_t i = 0; i < bytes; i += 64) scratch[i] = static_cast<char>(scratch[i] + 1);
}

template <class F>
double median_s(const BenchOptions& o, F&& f) {
  for (int i = 0; i < o.warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, o.repeats); ++i) {
    flush_caches(*o.scratch, o.flush_bytes);
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Deterministic small values: kernels see finite, varied inputs.
std::vector<float> buffer(int64_t n, float scale = 0.02f) {
  std::vector<float> b(static_cast<size_t>(n));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = scale * static_cast<float>(static_cast<int64_t>((i * 2654435761u) % 2001) - 1000) / 1000.0f;
  return b;
}

void zero(std::vector<float>& b) { std::fill(b.begin(), b.end(), 0.0f); }

// The width of the linear layer `name` of layer_linear_shapes (the shapes both backends'
// microbenchmarks time).
int64_t linear_width(const std::vector<LinearShape>& shapes, const char* name) {
  for (const LinearShape& l : shapes)
    if (l.name == name) return l.n;
  throw std::logic_error(std::string("cpu microbenchmark: layer_linear_shapes lists no '") + name + "'");
}

// The buffers of one layer on one TP rank, shaped as executor/chunk.cpp allocates them: the
// fused q|k|v projection Wqkv wide, k and v of the rank's KVH key-value heads (grouped-query
// attention), and the first MLP linear fc_out wide.
struct LayerBench {
  int64_t B, T, N, C, NH, KVH, Ct, Wqkv, F, fc_out;
  bool swiglu, layernorm;
  std::vector<float> inp, ln, mean, rstd, normw, normb, qkvw, qkvb, qkv, att, atty, projw, tmp,
      projb, resid, fcw, fcb, fch, fch_act, fcprojw, out;
  std::vector<float> dres, dqkvw, dqkvb, dprojw, dfcw, dfcb, dfcprojw, dnormw, dnormb, dln, datty,
      dqkv, dfch, dfch_act, dbias;

  LayerBench(const ModelSpec& m, int64_t tp, int64_t mb, const std::vector<LinearShape>& shapes)
      : B(mb), T(m.seq_len), N(mb * m.seq_len), C(m.hidden), NH(m.heads / tp),
        KVH(m.kv_head_count() / tp), Ct(m.heads / tp * m.head_dim()),
        Wqkv(linear_width(shapes, "qkv")), F(m.ffn_hidden / tp), fc_out(linear_width(shapes, "fc")),
        swiglu(m.activation == Activation::swiglu), layernorm(m.norm == Norm::layernorm) {
    inp = buffer(N * C, 1.0f);
    ln = buffer(N * C);
    mean = buffer(N);
    rstd = buffer(N);
    normw = buffer(C, 1.0f);
    normb = buffer(C);
    qkvw = buffer(Wqkv * C);
    qkvb = buffer(Wqkv);
    qkv = buffer(N * Wqkv);
    att = buffer(B * NH * T * T);
    atty = buffer(N * Ct);
    projw = buffer(C * Ct);
    tmp = buffer(N * C);
    projb = buffer(C);
    resid = buffer(N * C);
    fcw = buffer(fc_out * C);
    fcb = buffer(fc_out);
    fch = buffer(N * fc_out);
    fch_act = buffer(N * F);
    fcprojw = buffer(C * F);
    out = buffer(N * C);
    dres = buffer(N * C);
    dqkvw = buffer(Wqkv * C);
    dqkvb = buffer(Wqkv);
    dprojw = buffer(C * Ct);
    dfcw = buffer(fc_out * C);
    dfcb = buffer(fc_out);
    dfcprojw = buffer(C * F);
    dnormw = buffer(C);
    dnormb = buffer(C);
    dln = buffer(N * C);
    datty = buffer(N * Ct);
    dqkv = buffer(N * Wqkv);
    dfch = buffer(N * fc_out);
    dfch_act = buffer(N * F);
    dbias = buffer(C);
  }

  void norm_fwd() {
    if (layernorm)
      k::layernorm_forward(ln.data(), mean.data(), rstd.data(), inp.data(), normw.data(),
                           normb.data(), N, C);
    else
      k::rmsnorm_forward(ln.data(), rstd.data(), inp.data(), normw.data(), N, C);
  }
  void norm_bwd() {
    if (layernorm)
      k::layernorm_backward(dres.data(), dnormw.data(), dnormb.data(), dln.data(), inp.data(),
                            normw.data(), mean.data(), rstd.data(), N, C);
    else
      k::rmsnorm_backward(dres.data(), dnormw.data(), dln.data(), inp.data(), normw.data(),
                          rstd.data(), N, C);
  }
};

// Copies of a GEMM's operands that must come from memory: `count` sets, together at least twice
// the last-level cache, so that a loop over them finds each set evicted by the others. The sets
// live in the sweep's scratch (BenchScratch::rotation), reused by every GEMM.
struct Rotation {
  float* base = nullptr;
  int64_t floats_per_set = 0;
  int64_t count = 0;
  Rotation(const std::vector<std::pair<const float*, int64_t>>& operands, const BenchOptions& o) {
    for (const auto& op : operands) floats_per_set += op.second;
    const auto bytes = static_cast<size_t>(floats_per_set) * sizeof(float);
    count = std::max<int64_t>(2, static_cast<int64_t>((2 * o.caches.llc_bytes + bytes - 1) / bytes));
    std::vector<float>& arena = o.scratch->rotation;
    const auto need = static_cast<size_t>(count * floats_per_set);
    if (arena.size() < need) arena.resize(need);
    base = arena.data();
    for (int64_t set = 0; set < count; ++set) {
      float* dst = at(set, 0);
      for (const auto& op : operands) dst = std::copy(op.first, op.first + op.second, dst);
    }
  }
  float* at(int64_t set, int64_t offset) const { return base + set * floats_per_set + offset; }
};

// Seconds per call of f(set) over one loop through every set of `r`; the median of three loops,
// or of as many as it takes for o.repeats calls.
template <class F>
double rotating_s(const BenchOptions& o, const Rotation& r, F&& f) {
  for (int i = 0; i < o.warmup; ++i) f(i % r.count);
  std::vector<double> t;
  const int64_t loops = std::max<int64_t>(3, (std::max(1, o.repeats) + r.count - 1) / r.count);
  for (int64_t i = 0; i < loops; ++i) {
    const auto t0 = Clock::now();
    for (int64_t set = 0; set < r.count; ++set) f(set);
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(r.count));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Times one linear layer forward (out = inp W^T + b) and backward (zeroed dinp, dgrad + wgrad)
// as a training step meets it: its weight, and in backward its stashed input and the weight
// gradient, were last touched a whole pass of the other layers ago, so they come from memory;
// its output goes to a buffer of its own. Warm (o.hot_inputs), the operand the previous op just
// produced (inp forward, dout backward) is hot; cold, it comes from memory too. Each call takes
// the next of a rotation of operand copies larger than the last-level cache (no flush between
// calls: another rank's flush would load the memory this one times). Timed with every operand
// hot, gpt-tiny's GEMMs ran 9-24% faster than the executor ran them; flushing twice the
// last-level cache before each call left the 64-row GEMMs 20-50% slower, by an amount that
// changed from one calibration to the next.
void bench_linear(ComputeSample& s, const BenchOptions& o, float* out, const float* inp,
                  const float* w, const float* b, float* dinp, float* dw, float* db,
                  const float* dout, int64_t N, int64_t C, int64_t OC) {
  const bool warm = o.hot_inputs;
  const int64_t n_out = N * OC, n_inp = N * C, n_w = OC * C;
  // Forward: [w, out] (+ inp cold).
  std::vector<std::pair<const float*, int64_t>> f_ops = {{w, n_w}, {out, n_out}};
  if (!warm) f_ops.push_back({inp, n_inp});
  Rotation fr(f_ops, o);
  const double fwd = rotating_s(o, fr, [&](int64_t i) {
    k::matmul_forward(fr.at(i, n_w), warm ? inp : fr.at(i, n_w + n_out), fr.at(i, 0), b, N, C, OC);
  });
  // Backward: [w, inp, dw] (+ dout cold); dinp is zeroed inside the call, so hot.
  std::vector<std::pair<const float*, int64_t>> b_ops = {{w, n_w}, {inp, n_inp}, {dw, n_w}};
  if (!warm) b_ops.push_back({dout, n_out});
  Rotation br(b_ops, o);
  const double bwd = rotating_s(o, br, [&](int64_t i) {
    std::fill(dinp, dinp + n_inp, 0.0f);
    k::matmul_backward(dinp, br.at(i, n_w + n_inp), db, warm ? dout : br.at(i, 2 * n_w + n_inp),
                       br.at(i, n_w), br.at(i, 0), N, C, OC);
  });
  const double m = static_cast<double>(N), n = static_cast<double>(OC), kk = static_cast<double>(C);
  s.gemms.push_back({false, m, n, kk, fwd});
  s.gemms.push_back({true, m, n, kk, bwd});
}

// The embedding (vocab-parallel rows of this rank, learned positions), the final norm and the
// head (its GEMM and cross-entropy) of one pass, into s.
void bench_embedding_and_head(ComputeSample& s, LayerBench& L, const BenchOptions& o) {
  const ModelSpec& m = s.model;
  const int64_t tp = s.tp;
  const int64_t N = L.N, C = L.C;
  auto add = [&](const char* cls, double t) { s.class_s[cls] += t; };
  const int64_t vl = padded_vocab(m.vocab, tp) / tp;
  const int64_t valid = std::min(vl, m.vocab);
  std::vector<int32_t> tokens(static_cast<size_t>(N)), targets(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    tokens[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % m.vocab);
    targets[static_cast<size_t>(i)] = static_cast<int32_t>((i * 104729 + 1) % m.vocab);
  }
  std::vector<float> wte = buffer(vl * C), dwte = buffer(vl * C), wpe = buffer(m.seq_len * C),
                     dwpe = buffer(m.seq_len * C);
  const bool learned = m.position == Position::learned;
  add("embedding", median_s(o, [&] {
        k::embedding_forward(L.out.data(), tokens.data(), wte.data(), 0, vl, N, C);
        if (learned) k::position_forward_rows(L.out.data(), wpe.data(), 0, N, L.T, C);
      }));
  add("embedding.bwd", median_s(o, [&] {
        if (learned) k::position_backward_rows(dwpe.data(), L.dres.data(), 0, N, L.T, C);
        k::embedding_backward(dwte.data(), L.dres.data(), tokens.data(), 0, vl, N, C);
      }));
  add("norm", median_s(o, [&] { L.norm_fwd(); }));
  std::vector<float> logits = buffer(N * vl), ce = buffer(3 * N), losses = buffer(N);
  bench_linear(s, o, logits.data(), L.ln.data(), wte.data(), nullptr, L.dln.data(), dwte.data(),
               nullptr, logits.data(), N, C, vl);
  add("cross_entropy", median_s(o, [&] {
        float* maxes = ce.data();
        float* sums = ce.data() + N;
        float* target = ce.data() + 2 * N;
        k::crossentropy_local_max(maxes, logits.data(), N, vl, valid);
        k::crossentropy_local_sums(sums, target, logits.data(), maxes, targets.data(), 0, N, vl,
                                   valid);
        k::crossentropy_finish(losses.data(), logits.data(), maxes, sums, target, targets.data(),
                               0, 1.0f / static_cast<float>(N), N, vl, valid);
      }));
}

ComputeSample bench_compute_pass(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                 const BenchOptions& o) {
  ComputeSample s;
  s.model = m;
  s.tp = tp;
  s.micro_batch = micro_batch;
  LayerBench L(m, tp, micro_batch, layer_linear_shapes(m, tp, micro_batch));
  const int64_t N = L.N, C = L.C;
  auto add = [&](const char* cls, double t) { s.class_s[cls] += t; };

  // Layer forward, in the executor's order.
  add("norm", median_s(o, [&] { L.norm_fwd(); }));
  bench_linear(s, o, L.qkv.data(), L.ln.data(), L.qkvw.data(), L.qkvb.data(), L.dln.data(),
               L.dqkvw.data(), L.dqkvb.data(), L.dqkv.data(), N, C, L.Wqkv);
  add("attention", median_s(o, [&] {
        k::attention_forward(L.atty.data(), L.att.data(), L.qkv.data(), L.B, L.T, L.Ct, L.NH,
                             L.KVH);
      }));
  bench_linear(s, o, L.tmp.data(), L.atty.data(), L.projw.data(), nullptr, L.datty.data(),
               L.dprojw.data(), nullptr, L.dres.data(), N, L.Ct, C);
  const double residual = median_s(o, [&] {
    k::bias_forward(L.tmp.data(), L.projb.data(), N, C);
    k::residual_forward(L.resid.data(), L.inp.data(), L.tmp.data(), N * C);
  });
  add("residual", 2 * residual);  // after attention and after the MLP
  add("norm", median_s(o, [&] { L.norm_fwd(); }));
  bench_linear(s, o, L.fch.data(), L.ln.data(), L.fcw.data(), L.fcb.data(), L.dln.data(),
               L.dfcw.data(), L.dfcb.data(), L.dfch.data(), N, C, L.fc_out);
  add("activation", median_s(o, [&] {
        if (L.swiglu)
          k::swiglu_forward(L.fch_act.data(), L.fch.data(), N, L.F);
        else
          k::gelu_forward(L.fch_act.data(), L.fch.data(), N * L.F);
      }));
  bench_linear(s, o, L.out.data(), L.fch_act.data(), L.fcprojw.data(), nullptr,
               L.dfch_act.data(), L.dfcprojw.data(), nullptr, L.dres.data(), N, L.F, C);

  // Layer backward: the kernels the GEMM benchmarks above did not cover.
  add("residual.bwd", 2 * median_s(o, [&] { k::bias_backward(L.dbias.data(), L.dres.data(), N, C); }));
  add("activation.bwd", median_s(o, [&] {
        zero(L.dfch);
        if (L.swiglu)
          k::swiglu_backward(L.dfch.data(), L.fch.data(), L.dfch_act.data(), N, L.F);
        else
          k::gelu_backward(L.dfch.data(), L.fch.data(), L.dfch_act.data(), N * L.F);
      }));
  const double norm_bwd = median_s(o, [&] { L.norm_bwd(); });
  add("norm.bwd", 2 * norm_bwd);
  add("attention.bwd", median_s(o, [&] {
        zero(L.dqkv);
        k::attention_backward(L.dqkv.data(), L.datty.data(), L.qkv.data(), L.att.data(), L.B,
                              L.T, L.Ct, L.NH, L.KVH);
      }));

  bench_embedding_and_head(s, L, o);
  add("norm.bwd", norm_bwd);
  return s;
}

}  // namespace

ComputeSample bench_compute(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                            const BenchOptions& o, MPI_Comm comm) {
  BenchOptions cold = o, warm = o;
  cold.flush_bytes = 2 * o.caches.llc_bytes;
  // Warm: no flush, the data hot from the warm-up and the previous repeat. A trainer's
  // consecutive ops hand each other their tensors the same way; flushing the private caches
  // before each call (data in the shared L3 only) left gpt-tiny's ops 15-30% slower than the
  // executor ran them. GEMMs keep their weights cold in both passes (bench_linear).
  warm.flush_bytes = 0;
  warm.hot_inputs = true;
  MPI_Barrier(comm);
  ComputeSample s = bench_compute_pass(m, tp, micro_batch, cold);
  MPI_Barrier(comm);  // no rank's cold flush while another times warm calls
  const ComputeSample w = bench_compute_pass(m, tp, micro_batch, warm);
  s.class_warm_s = w.class_s;
  for (size_t i = 0; i < s.gemms.size(); ++i) s.gemms[i].warm_seconds = w.gemms[i].seconds;
  return s;
}

OptimizerSample bench_optimizer(int64_t params, const BenchOptions& opt) {
  BenchOptions o = opt;  // cold: the step walks every parameter, gradient and Adam state once
  o.flush_bytes = 2 * opt.caches.llc_bytes;
  std::vector<float> p = buffer(params, 1.0f), g = buffer(params), m = buffer(params),
                     v(static_cast<size_t>(params), 1e-4f);
  k::AdamW h;
  int64_t step = 1;
  const double t = median_s(o, [&] {
    const double norm = std::sqrt(k::sum_squares(g.data(), params));
    k::scale_inplace(g.data(), static_cast<float>(1.0 / (1.0 + norm)), params);
    k::adamw_update(p.data(), g.data(), m.data(), v.data(), params, h, step++, true);
    std::fill(g.begin(), g.end(), 1e-3f);  // the next step's gradient zeroing (and refill)
  });
  return {static_cast<double>(params), t};
}

std::vector<CommSample> bench_comm(MPI_Comm world, const std::vector<double>& sizes_bytes,
                                   const BenchOptions& o) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<CommSample> out;
  exec::Recorder rec;
  rec.keep_events = false;
  exec::Comm comm(rec);

  // One call at a time, as a training step issues them between kernels: caches flushed, ranks
  // released together by a barrier; the median over repeats of the slowest rank's time.
  auto time_calls = [&](MPI_Comm c, auto&& call) {
    for (int i = 0; i < std::max(1, o.warmup); ++i) call();
    std::vector<double> ts;
    for (int i = 0; i < std::max(3, o.repeats); ++i) {
      flush_caches(*o.scratch, 2 * o.caches.llc_bytes);
      MPI_Barrier(c);
      const double t0 = MPI_Wtime();
      call();
      double t = MPI_Wtime() - t0;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, c);
      ts.push_back(t);
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
  };

  for (int n = 2; n <= size; ++n) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(world, rank < n ? 0 : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      exec::Group g{sub, rank, n, "bench"};
      for (double bytes : sizes_bytes) {
        const int64_t floats = std::max<int64_t>(n, static_cast<int64_t>(bytes / 4) / n * n);
        const double b = 4.0 * static_cast<double>(floats);
        std::vector<float> x = buffer(floats);
        const double ar = time_calls(sub, [&] {
          comm.all_reduce_sum(x.data(), floats, g, exec::Stream::dp, "bench");
        });
        const double rs = time_calls(sub, [&] {
          comm.reduce_scatter_sum(x.data(), floats / n, g, "bench");
        });
        const double ag = time_calls(sub, [&] { comm.all_gather(x.data(), floats / n, g, "bench"); });
        if (rank == 0) {
          out.push_back({Collective::all_reduce, n, b, ar});
          out.push_back({Collective::reduce_scatter, n, b, rs});
          out.push_back({Collective::all_gather, n, b, ag});
        }
        if (n == 2) {
          // One-way time of the executor's pipeline transfer: half a round trip.
          const double rt = time_calls(sub, [&] {
            if (rank == 0) {
              comm.send(x.data(), floats, 1, 7, g, "bench");
              comm.recv(x.data(), floats, 1, 8, g, "bench");
            } else {
              comm.recv(x.data(), floats, 0, 7, g, "bench");
              comm.send(x.data(), floats, 0, 8, g, "bench");
            }
            comm.wait_sends();
          });
          if (rank == 0) out.push_back({Collective::send_recv, 2, b, rt / 2});
        }
        rec.clear_stats();
      }
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(world);
  }
  return out;
}

}  // namespace parallax::calib
