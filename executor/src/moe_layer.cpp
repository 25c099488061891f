// The mixture-of-experts FFN on the CPU backend (moe_layer.hpp).
#include "moe_layer.hpp"

#include <cmath>
#include <string>

#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

namespace {
std::string shape2(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

MoeShape moe_shape(const ModelSpec& m, const PlanSpec& p, const Dims& d) {
  MoeShape s;
  s.N = d.N;
  s.C = d.C;
  s.E = m.moe.num_experts;
  s.k = m.moe.top_k;
  s.Fe = m.moe.expert_ffn_hidden / p.tp;
  s.Fs = m.moe.shared_experts * m.moe.shared_expert_ffn_hidden / p.tp;
  s.row0 = d.row0;
  s.Ns = d.Ns;
  s.cp = d.cp;
  s.sigmoid = m.moe.router == Router::sigmoid;
  s.aux_coeff = m.moe.aux_loss_coeff;
  s.aux_weight = 1.0 / static_cast<double>(p.num_micro_batches * p.dp);
  return s;
}

MoeLayer::MoeLayer(const MoeShape& s) : s_(s) {
  const auto n = [](int64_t x) { return static_cast<size_t>(x); };
  const int64_t rows = s.N * s.k;
  expert_.resize(n(rows));
  order_.resize(n(rows));
  pos_.resize(n(rows));
  first_.resize(n(s.E + 1));
  xin_.resize(n(s.N * s.C));
  dy_.resize(n(s.N * s.C));
  dxin_.resize(n(s.N * s.C));
  dhact_.resize(n(s.N * s.Fe));
  dh_.resize(n(s.N * 2 * s.Fe));
  dprob_.resize(n(rows));
  dlogits_.resize(n(s.N * s.E));
  dshact_.resize(n(s.N * s.Fs));
  dsh_.resize(n(s.N * 2 * s.Fs));
}

int64_t MoeLayer::act_floats() const {
  const int64_t rows = s_.N * s_.k;
  return s_.N * s_.E + rows + s_.E + rows * (3 * s_.Fe + s_.C) + s_.N * 3 * s_.Fs;
}

MoeActs MoeLayer::layout(float* cur) const {
  auto take = [&cur](int64_t n) {
    float* p = cur;
    cur += n;
    return p;
  };
  const int64_t rows = s_.N * s_.k;
  MoeActs a;
  a.logits = take(s_.N * s_.E);
  a.probs = take(rows);
  a.tokens = take(s_.E);
  a.h = take(rows * 2 * s_.Fe);
  a.hact = take(rows * s_.Fe);
  a.y = take(rows * s_.C);
  a.sh = take(s_.N * 2 * s_.Fs);
  a.shact = take(s_.N * s_.Fs);
  return a;
}

void MoeLayer::route(const float* logits) {
  const int64_t E = s_.E, k = s_.k;
  for (int64_t n = 0; n < s_.N; ++n) {
    const float* l = logits + n * E;
    int32_t* chosen = expert_.data() + n * k;
    for (int64_t j = 0; j < k; ++j) {  // the largest not yet chosen; ties to the lower index
      int32_t best = -1;
      for (int32_t e = 0; e < E; ++e) {
        bool taken = false;
        for (int64_t i = 0; i < j; ++i) taken = taken || chosen[i] == e;
        if (!taken && (best < 0 || l[e] > l[best])) best = e;
      }
      chosen[j] = best;
    }
  }
  std::fill(first_.begin(), first_.end(), 0);
  for (const int32_t e : expert_) ++first_[static_cast<size_t>(e) + 1];
  for (int64_t e = 0; e < E; ++e)
    first_[static_cast<size_t>(e + 1)] += first_[static_cast<size_t>(e)];
  std::vector<int64_t> next(first_.begin(), first_.end() - 1);
  for (int64_t slot = 0; slot < s_.N * k; ++slot) {  // tokens ascending within each expert
    const auto e = static_cast<size_t>(expert_[static_cast<size_t>(slot)]);
    order_[static_cast<size_t>(next[e])] = static_cast<int32_t>(slot);
    pos_[static_cast<size_t>(slot)] = static_cast<int32_t>(next[e]++);
  }
}

void MoeLayer::forward(float* out, const float* ln, const LayerWeightsT<float>& w, const MoeActs& a,
                       CpuBackend& be, Comm& comm, const ProcessGroups& g, double* aux_acc) {
  const int64_t N = s_.N, C = s_.C, E = s_.E, k = s_.k;
  be.time("moe_router", 2.0 * static_cast<double>(N * C * E), shape2(N, E), [&] {
    kernels::matmul_forward(a.logits, ln, w.router, nullptr, N, C, E);
    route(a.logits);
    for (int64_t n = 0; n < N; ++n) {
      const float* l = a.logits + n * E;
      const int32_t* chosen = expert_.data() + n * k;
      float* p = a.probs + n * k;
      if (!s_.sigmoid) {  // softmax over the k chosen logits (chosen[0] is the largest)
        double sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += std::exp(static_cast<double>(l[chosen[j]] - l[chosen[0]]));
        for (int64_t j = 0; j < k; ++j)
          p[j] =
              static_cast<float>(std::exp(static_cast<double>(l[chosen[j]] - l[chosen[0]])) / sum);
      } else {
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += sigmoid(l[chosen[j]]);
        for (int64_t j = 0; j < k; ++j)
          p[j] = static_cast<float>(k > 1 ? sigmoid(l[chosen[j]]) / (sum + 1e-20)
                                          : sigmoid(l[chosen[j]]));
      }
    }
    for (int64_t e = 0; e < E; ++e)
      a.tokens[e] =
          static_cast<float>(first_[static_cast<size_t>(e + 1)] - first_[static_cast<size_t>(e)]);
  });
  comm.all_reduce_sum(a.tokens, E, g.cp, Stream::tp, "cp_all_reduce_moe_tokens");
  if (aux_acc && s_.aux_coeff > 0) {
    double aux = 0;
    for (int64_t n = 0; n < N; ++n) {
      const float* l = a.logits + n * E;
      double z = 0, mx = l[0];
      for (int64_t e = 1; e < E; ++e) mx = std::max(mx, static_cast<double>(l[e]));
      for (int64_t e = 0; e < E; ++e) z += s_.sigmoid ? sigmoid(l[e]) : std::exp(l[e] - mx);
      for (int64_t e = 0; e < E; ++e) {
        const double score = (s_.sigmoid ? sigmoid(l[e]) / (z + 1e-20) : std::exp(l[e] - mx) / z);
        aux += score * static_cast<double>(a.tokens[e]);
      }
    }
    const double T = static_cast<double>(N * s_.cp);
    *aux_acc += aux * s_.aux_coeff * static_cast<double>(E) / (static_cast<double>(k) * T * T) *
                s_.aux_weight;
  }
  // The shared experts write out; the routed experts add to it.
  if (s_.Fs > 0) {
    be.time("moe_shared_experts", 6.0 * static_cast<double>(N * C * s_.Fs), shape2(N, s_.Fs), [&] {
      kernels::matmul_forward(a.sh, ln, w.shared_fc, nullptr, N, C, 2 * s_.Fs);
      kernels::swiglu_forward(a.shact, a.sh, N, s_.Fs);
      kernels::matmul_forward(out, a.shact, w.shared_proj, nullptr, N, s_.Fs, C);
    });
  } else {
    be.zero(out, N * C);
  }
  be.time("moe_experts", 6.0 * static_cast<double>(N * k * C * s_.Fe), shape2(N * k, s_.Fe), [&] {
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = first_[static_cast<size_t>(e)],
                    rows = first_[static_cast<size_t>(e + 1)] - r0;
      if (rows == 0) continue;
      for (int64_t r = 0; r < rows; ++r)
        be.copy(xin_.data() + r * C, ln + (order_[static_cast<size_t>(r0 + r)] / k) * C, C);
      const auto ue = static_cast<size_t>(e);
      kernels::matmul_forward(a.h + r0 * 2 * s_.Fe, xin_.data(), w.expert_fc[ue], nullptr, rows, C,
                              2 * s_.Fe);
      kernels::swiglu_forward(a.hact + r0 * s_.Fe, a.h + r0 * 2 * s_.Fe, rows, s_.Fe);
      kernels::matmul_forward(a.y + r0 * C, a.hact + r0 * s_.Fe, w.expert_proj[ue], nullptr, rows,
                              s_.Fe, C);
    }
    for (int64_t n = 0; n < N; ++n)  // each token's experts in descending score
      for (int64_t j = 0; j < k; ++j) {
        const float p = a.probs[n * k + j];
        const float* y = a.y + pos_[static_cast<size_t>(n * k + j)] * C;
        for (int64_t c = 0; c < C; ++c) out[n * C + c] += p * y[c];
      }
  });
}

// dlogits_row (E) += the aux loss's gradient through the scores of one token.
void MoeLayer::aux_score_grads(float* dlogits_row, const float* l, const float* tokens) const {
  const int64_t E = s_.E;
  const double T = static_cast<double>(s_.N * s_.cp);
  const double unit =
      s_.aux_weight * s_.aux_coeff * static_cast<double>(E) / (static_cast<double>(s_.k) * T * T);
  std::vector<double> score(static_cast<size_t>(E));
  double z = 0, mx = l[0];
  for (int64_t e = 1; e < E; ++e) mx = std::max(mx, static_cast<double>(l[e]));
  for (int64_t e = 0; e < E; ++e) {
    score[static_cast<size_t>(e)] = s_.sigmoid ? sigmoid(l[e]) : std::exp(l[e] - mx);
    z += score[static_cast<size_t>(e)];
  }
  double dot = 0;  // sum_m dscore_m score_m
  for (int64_t e = 0; e < E; ++e) dot += unit * tokens[e] * score[static_cast<size_t>(e)];
  for (int64_t e = 0; e < E; ++e) {
    const double c = unit * tokens[e], sc = score[static_cast<size_t>(e)];
    if (!s_.sigmoid) {  // score = softmax: d l_e = s_e (c_e - sum_m s_m c_m)
      dlogits_row[e] += static_cast<float>(sc / z * (c - dot / z));
    } else {  // score = sig / (Z + eps): d sig_e = c_e / Z' - sum_m c_m sig_m / Z'^2
      const double zz = z + 1e-20;
      dlogits_row[e] += static_cast<float>((c / zz - dot / (zz * zz)) * sc * (1.0 - sc));
    }
  }
}

void MoeLayer::backward_experts(float* dln, const float* dout, const float* ln,
                                const LayerWeightsT<float>& w, const LayerWeightsT<float>& gw,
                                const MoeActs& a, CpuBackend& be, Comm& comm,
                                const ProcessGroups& g) {
  const int64_t N = s_.N, C = s_.C, E = s_.E, k = s_.k, Fe = s_.Fe;
  route(a.logits);
  if (s_.Fs > 0)
    be.time("moe_shared_experts_backward", 12.0 * static_cast<double>(N * C * s_.Fs),
            shape2(N, s_.Fs), [&] {
              be.zero(dshact_.data(), N * s_.Fs);
              kernels::matmul_backward(dshact_.data(), gw.shared_proj, nullptr, dout, a.shact,
                                       w.shared_proj, N, s_.Fs, C);
              be.zero(dsh_.data(), N * 2 * s_.Fs);
              kernels::swiglu_backward(dsh_.data(), a.sh, dshact_.data(), N, s_.Fs);
              kernels::matmul_backward(dln, gw.shared_fc, nullptr, dsh_.data(), ln, w.shared_fc, N,
                                       C, 2 * s_.Fs);
            });
  be.time("moe_experts_backward", 12.0 * static_cast<double>(N * k * C * Fe), shape2(N * k, Fe),
          [&] {
            for (int64_t e = 0; e < E; ++e) {
              const int64_t r0 = first_[static_cast<size_t>(e)],
                            rows = first_[static_cast<size_t>(e + 1)] - r0;
              if (rows == 0) continue;
              const auto ue = static_cast<size_t>(e);
              for (int64_t r = 0; r < rows; ++r) {
                const int32_t slot = order_[static_cast<size_t>(r0 + r)];
                const float* d = dout + (slot / k) * C;
                const float* y = a.y + (r0 + r) * C;
                const float p = a.probs[slot];
                double dot = 0;
                for (int64_t c = 0; c < C; ++c) {
                  dy_[static_cast<size_t>(r * C + c)] = p * d[c];
                  dot += static_cast<double>(d[c]) * y[c];
                }
                dprob_[static_cast<size_t>(slot)] = static_cast<float>(dot);
                be.copy(xin_.data() + r * C, ln + (slot / k) * C, C);
              }
              be.zero(dhact_.data(), rows * Fe);
              kernels::matmul_backward(dhact_.data(), gw.expert_proj[ue], nullptr, dy_.data(),
                                       a.hact + r0 * Fe, w.expert_proj[ue], rows, Fe, C);
              be.zero(dh_.data(), rows * 2 * Fe);
              kernels::swiglu_backward(dh_.data(), a.h + r0 * 2 * Fe, dhact_.data(), rows, Fe);
              be.zero(dxin_.data(), rows * C);
              kernels::matmul_backward(dxin_.data(), gw.expert_fc[ue], nullptr, dh_.data(),
                                       xin_.data(), w.expert_fc[ue], rows, C, 2 * Fe);
              for (int64_t r = 0; r < rows; ++r) {
                float* dx = dln + (order_[static_cast<size_t>(r0 + r)] / k) * C;
                for (int64_t c = 0; c < C; ++c) dx[c] += dxin_[static_cast<size_t>(r * C + c)];
              }
            }
          });
  // A probability's gradient is the dot product with the whole expert output: sum the parts.
  comm.all_reduce_sum(dprob_.data(), N * k, g.tp, Stream::tp, "tp_all_reduce_moe_dprobs");
  be.time("moe_router_backward", 10.0 * static_cast<double>(N * E), shape2(N, E), [&] {
    be.zero(dlogits_.data(), N * E);
    for (int64_t n = 0; n < N; ++n) {
      const float* l = a.logits + n * E;
      const int32_t* chosen = expert_.data() + n * k;
      const float* p = a.probs + n * k;
      const float* dp = dprob_.data() + n * k;
      float* dl = dlogits_.data() + n * E;
      if (!s_.sigmoid) {  // p = softmax of the chosen logits
        double dot = 0;
        for (int64_t j = 0; j < k; ++j) dot += static_cast<double>(p[j]) * dp[j];
        for (int64_t j = 0; j < k; ++j) dl[chosen[j]] += static_cast<float>(p[j] * (dp[j] - dot));
      } else {  // p = s / (sum s + 1e-20) over the chosen (k = 1: s), s = sigmoid(l)
        double sum = 0, dot = 0;
        for (int64_t j = 0; j < k; ++j) {
          sum += sigmoid(l[chosen[j]]);
          dot += static_cast<double>(dp[j]) * sigmoid(l[chosen[j]]);
        }
        const double z = sum + 1e-20;
        for (int64_t j = 0; j < k; ++j) {
          const double sg = sigmoid(l[chosen[j]]);
          const double ds = k > 1 ? dp[j] / z - dot / (z * z) : dp[j];
          dl[chosen[j]] += static_cast<float>(ds * sg * (1.0 - sg));
        }
      }
      if (s_.aux_coeff > 0) aux_score_grads(dl, l, a.tokens);
    }
  });
}

void MoeLayer::backward_router(float* drows, const float* ln, const LayerWeightsT<float>& w,
                               const LayerWeightsT<float>& gw, CpuBackend& be) {
  be.time("moe_router_matmul_backward", 4.0 * static_cast<double>(s_.Ns * s_.C * s_.E),
          shape2(s_.Ns, s_.E), [&] {
            kernels::matmul_backward(drows, gw.router, nullptr, dlogits_.data() + s_.row0 * s_.E,
                                     ln + s_.row0 * s_.C, w.router, s_.Ns, s_.C, s_.E);
          });
}

}  // namespace parallax::exec
