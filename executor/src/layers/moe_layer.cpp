// The mixture-of-experts FFN on the CPU backend (moe_layer.hpp).
#include "moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

namespace {
std::string shape2(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// p (k) = the router's probabilities of one token's chosen experts, from its logits l: the softmax
// over the k chosen logits (chosen[0] is the largest), or the sigmoids normalised over the chosen
// (k = 1: the sigmoid).
void chosen_probs(float* p, const float* l, const int32_t* chosen, int64_t k, bool use_sigmoid) {
  if (!use_sigmoid) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += std::exp(static_cast<double>(l[chosen[j]] - l[chosen[0]]));
    for (int64_t j = 0; j < k; ++j)
      p[j] = static_cast<float>(std::exp(static_cast<double>(l[chosen[j]] - l[chosen[0]])) / sum);
  } else {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += sigmoid(l[chosen[j]]);
    for (int64_t j = 0; j < k; ++j)
      p[j] =
          static_cast<float>(k > 1 ? sigmoid(l[chosen[j]]) / (sum + 1e-20) : sigmoid(l[chosen[j]]));
  }
}

// dl (E) += the gradient through chosen_probs of one token, given its probabilities' gradients dp.
void chosen_probs_backward(float* dl, const float* l, const int32_t* chosen, const float* p,
                           const float* dp, int64_t k, bool use_sigmoid) {
  if (!use_sigmoid) {  // p = softmax of the chosen logits
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
}

// The auxiliary load-balancing loss before its coefficients: sum over tokens n and experts e of
// score(n, e) x tokens[e], the scores the softmax (or the normalised sigmoids) of all E logits.
double aux_scores_dot_tokens(const float* logits, const float* tokens, int64_t N, int64_t E,
                             bool use_sigmoid) {
  double aux = 0;
  for (int64_t n = 0; n < N; ++n) {
    const float* l = logits + n * E;
    double z = 0, mx = l[0];
    for (int64_t e = 1; e < E; ++e) mx = std::max(mx, static_cast<double>(l[e]));
    for (int64_t e = 0; e < E; ++e) z += use_sigmoid ? sigmoid(l[e]) : std::exp(l[e] - mx);
    for (int64_t e = 0; e < E; ++e) {
      const double score = (use_sigmoid ? sigmoid(l[e]) / (z + 1e-20) : std::exp(l[e] - mx) / z);
      aux += score * static_cast<double>(tokens[e]);
    }
  }
  return aux;
}

}  // namespace

MoeShape moe_shape(const ModelSpec& m, const PlanSpec& p, const Dims& d, int64_t ep_rank) {
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
  s.ep = std::max<int64_t>(p.ep, 1);
  s.ep_rank = ep_rank;
  s.El = s.E / s.ep;
  // A token's k experts are distinct: at most min(k, El) of its rows reach one rank's experts.
  s.R = s.ep == 1 ? s.N * s.k : s.ep * s.N * std::min(s.k, s.El);
  return s;
}

MoeLayer::MoeLayer(const MoeShape& s) : s_(s) {
  const auto n = [](int64_t x) { return static_cast<size_t>(x); };
  const int64_t rows = s.N * s.k;
  const int64_t per_expert = std::min(s.R, s.ep * s.N);  // one local expert's rows at most
  expert_.resize(n(rows));
  order_.resize(n(rows));
  pos_.resize(n(rows));
  first_.resize(n(s.E + 1));
  send_rows_.resize(n(s.ep));
  recv_rows_.resize(n(s.ep));
  em_first_.resize(n(s.El + 1));
  pm_at_.resize(n(s.ep * s.El));
  em_at_.resize(n(s.ep * s.El));
  len_.resize(n(s.ep * s.El));
  src_.resize(n(rows * s.C));
  src2_.resize(n(rows * s.C));
  pm_.resize(n(s.R * s.C));
  if (s.ep > 1) {
    em_.resize(n(s.R * s.C));
    em2_.resize(n(s.R * s.C));
  }
  dhact_.resize(n(per_expert * s.Fe));
  dh_.resize(n(per_expert * 2 * s.Fe));
  dprob_.resize(n(rows));
  dlogits_.resize(n(s.N * s.E));
  dshact_.resize(n(s.N * s.Fs));
  dsh_.resize(n(s.N * 2 * s.Fs));
}

int64_t MoeLayer::act_floats() const {
  const int64_t rows = s_.N * s_.k;
  const int64_t exchange = s_.ep > 1 ? s_.ep * s_.El + s_.R * s_.C : 0;
  return s_.N * s_.E + rows + s_.E + s_.R * 3 * s_.Fe + rows * s_.C + s_.N * 3 * s_.Fs + exchange;
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
  a.h = take(s_.R * 2 * s_.Fe);
  a.hact = take(s_.R * s_.Fe);
  a.y = take(rows * s_.C);
  a.sh = take(s_.N * 2 * s_.Fs);
  a.shact = take(s_.N * s_.Fs);
  if (s_.ep > 1) {
    a.counts = take(s_.ep * s_.El);
    a.xr = take(s_.R * s_.C);
  }
  return a;
}

void MoeLayer::plan_exchange(const float* counts) {
  const int64_t ep = s_.ep, El = s_.El;
  const auto u = [](int64_t x) { return static_cast<size_t>(x); };
  for (int64_t o = 0; o < ep; ++o) send_rows_[u(o)] = first_[u((o + 1) * El)] - first_[u(o * El)];
  for (int64_t q = 0; q < ep; ++q) {
    recv_rows_[u(q)] = 0;
    for (int64_t j = 0; j < El; ++j) {
      const int64_t c = ep == 1 ? first_[u(j + 1)] - first_[u(j)]
                                : static_cast<int64_t>(counts[q * El + j]);
      len_[u(q * El + j)] = c;
      recv_rows_[u(q)] += c;
    }
  }
  int64_t at = 0;
  for (int64_t q = 0; q < ep; ++q)
    for (int64_t j = 0; j < El; ++j) {
      pm_at_[u(q * El + j)] = at;
      at += len_[u(q * El + j)];
    }
  at = 0;
  for (int64_t j = 0; j < El; ++j) {
    em_first_[u(j)] = at;
    for (int64_t q = 0; q < ep; ++q) {
      em_at_[u(q * El + j)] = at;
      at += len_[u(q * El + j)];
    }
  }
  em_first_[u(El)] = at;
  if (at > s_.R) throw std::logic_error("moe: more rows received than the stash holds");
}

void MoeLayer::permute(float* rows, const float* ln, CpuBackend& be) const {
  const int64_t n = s_.N * s_.k, C = s_.C;
  be.time("moe_permute", static_cast<double>(n * C), shape2(n, C), [&] {
    for (int64_t r = 0; r < n; ++r)
      be.copy(rows + r * C, ln + (order_[static_cast<size_t>(r)] / s_.k) * C, C);
  });
}

void MoeLayer::peer_to_expert(float* em, const float* pm, int64_t width) const {
  for (size_t b = 0; b < len_.size(); ++b)
    std::copy(pm + pm_at_[b] * width, pm + (pm_at_[b] + len_[b]) * width, em + em_at_[b] * width);
}

void MoeLayer::expert_to_peer(float* pm, const float* em, int64_t width) const {
  for (size_t b = 0; b < len_.size(); ++b)
    std::copy(em + em_at_[b] * width, em + (em_at_[b] + len_[b]) * width, pm + pm_at_[b] * width);
}

void MoeLayer::dispatch(float* em, const float* rows, Comm& comm, const ProcessGroups& g,
                        const char* what) {
  comm.all_to_all_v(rows, send_rows_, pm_.data(), recv_rows_, s_.C, g.ep, Stream::tp, what);
  peer_to_expert(em, pm_.data(), s_.C);
}

void MoeLayer::combine(float* rows, const float* em, Comm& comm, const ProcessGroups& g,
                       const char* what) {
  expert_to_peer(pm_.data(), em, s_.C);
  comm.all_to_all_v(pm_.data(), recv_rows_, rows, send_rows_, s_.C, g.ep, Stream::tp, what);
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
    for (int64_t n = 0; n < N; ++n)
      chosen_probs(a.probs + n * k, a.logits + n * E, expert_.data() + n * k, k, s_.sigmoid);
    for (int64_t e = 0; e < E; ++e)
      a.tokens[e] =
          static_cast<float>(first_[static_cast<size_t>(e + 1)] - first_[static_cast<size_t>(e)]);
  });
  comm.all_reduce_sum(a.tokens, E, g.cp, Stream::tp, "cp_all_reduce_moe_tokens");
  if (aux_acc && s_.aux_coeff > 0) {
    const double aux = aux_scores_dot_tokens(a.logits, a.tokens, N, E, s_.sigmoid);
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
  // Dispatch: each (token, expert) row, grouped by expert, to the expert's rank.
  const int64_t rows = N * k;
  permute(src_.data(), ln, be);
  if (s_.ep > 1) {
    std::vector<float> sent(static_cast<size_t>(E));  // rows per expert, grouped by rank
    for (int64_t e = 0; e < E; ++e)
      sent[static_cast<size_t>(e)] =
          static_cast<float>(first_[static_cast<size_t>(e + 1)] - first_[static_cast<size_t>(e)]);
    const std::vector<int64_t> each(static_cast<size_t>(s_.ep), s_.El);
    comm.all_to_all_v(sent.data(), each, a.counts, each, 1, g.ep, Stream::tp,
                      "ep_all_to_all_moe_counts");
    plan_exchange(a.counts);
    dispatch(a.xr, src_.data(), comm, g, "ep_all_to_all_moe_dispatch");
  } else {
    plan_exchange(nullptr);
  }
  const float* x = s_.ep > 1 ? a.xr : src_.data();
  float* y = s_.ep > 1 ? em_.data() : a.y;  // this rank's experts' outputs, grouped by expert
  experts_forward(y, x, a, w, be);
  if (s_.ep > 1) combine(a.y, em_.data(), comm, g, "ep_all_to_all_moe_combine");
  be.time("moe_unpermute", 2.0 * static_cast<double>(rows * C), shape2(rows, C), [&] {
    for (int64_t n = 0; n < N; ++n)  // each token's experts in descending score
      for (int64_t j = 0; j < k; ++j) {
        const float p = a.probs[n * k + j];
        const float* yr = a.y + pos_[static_cast<size_t>(n * k + j)] * C;
        for (int64_t c = 0; c < C; ++c) out[n * C + c] += p * yr[c];
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
  const int64_t N = s_.N, C = s_.C, E = s_.E, k = s_.k;
  route(a.logits);
  plan_exchange(s_.ep > 1 ? a.counts : nullptr);
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
  // The outputs' gradients p dout, in order_'s layout, and the probabilities' (partial) ones.
  const int64_t rows = N * k;
  be.time("moe_unpermute_backward", 4.0 * static_cast<double>(rows * C), shape2(rows, C), [&] {
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t slot = order_[static_cast<size_t>(r)];
      const float* d = dout + (slot / k) * C;
      const float* y = a.y + r * C;
      const float p = a.probs[slot];
      float* dy = src_.data() + r * C;
      double dot = 0;
      for (int64_t c = 0; c < C; ++c) {
        dy[c] = p * d[c];
        dot += static_cast<double>(d[c]) * y[c];
      }
      dprob_[static_cast<size_t>(slot)] = static_cast<float>(dot);
    }
  });
  const float* dy = src_.data();
  const float* x = nullptr;
  if (s_.ep > 1) {
    dispatch(em_.data(), src_.data(), comm, g, "ep_all_to_all_moe_dispatch_backward");
    dy = em_.data();
    x = a.xr;
  } else {  // the experts' inputs again, from ln
    permute(pm_.data(), ln, be);
    x = pm_.data();
  }
  float* dx = s_.ep > 1 ? em2_.data() : src2_.data();  // the inputs' gradients, grouped by expert
  experts_backward(dx, dy, x, a, w, gw, be);
  if (s_.ep > 1) combine(src2_.data(), em2_.data(), comm, g, "ep_all_to_all_moe_combine_backward");
  be.time("moe_permute_backward", static_cast<double>(rows * C), shape2(rows, C), [&] {
    for (int64_t r = 0; r < rows; ++r) {
      float* d = dln + (order_[static_cast<size_t>(r)] / k) * C;
      const float* s = src2_.data() + r * C;
      for (int64_t c = 0; c < C; ++c) d[c] += s[c];
    }
  });
  // A probability's gradient is the dot product with the whole expert output: sum the parts.
  comm.all_reduce_sum(dprob_.data(), N * k, g.tp, Stream::tp, "tp_all_reduce_moe_dprobs");
  be.time("moe_router_backward", 10.0 * static_cast<double>(N * E), shape2(N, E), [&] {
    be.zero(dlogits_.data(), N * E);
    for (int64_t n = 0; n < N; ++n) {
      const float* l = a.logits + n * E;
      float* dl = dlogits_.data() + n * E;
      chosen_probs_backward(dl, l, expert_.data() + n * k, a.probs + n * k, dprob_.data() + n * k, k,
                            s_.sigmoid);
      if (s_.aux_coeff > 0) aux_score_grads(dl, l, a.tokens);
    }
  });
}

void MoeLayer::experts_forward(float* y, const float* x, const MoeActs& a,
                               const LayerWeightsT<float>& w, CpuBackend& be) {
  const int64_t C = s_.C, Fe = s_.Fe;
  be.time("moe_experts", 6.0 * static_cast<double>(em_first_.back() * C * Fe),
          shape2(em_first_.back(), Fe), [&] {
            for_local_experts([&](int64_t r0, int64_t n, size_t e) {
              kernels::matmul_forward(a.h + r0 * 2 * Fe, x + r0 * C, w.expert_fc[e], nullptr, n, C,
                                      2 * Fe);
              kernels::swiglu_forward(a.hact + r0 * Fe, a.h + r0 * 2 * Fe, n, Fe);
              kernels::matmul_forward(y + r0 * C, a.hact + r0 * Fe, w.expert_proj[e], nullptr, n,
                                      Fe, C);
            });
          });
}

void MoeLayer::experts_backward(float* dx, const float* dy, const float* x, const MoeActs& a,
                                const LayerWeightsT<float>& w, const LayerWeightsT<float>& gw,
                                CpuBackend& be) {
  const int64_t C = s_.C, Fe = s_.Fe;
  be.time("moe_experts_backward", 12.0 * static_cast<double>(em_first_.back() * C * Fe),
          shape2(em_first_.back(), Fe), [&] {
            for_local_experts([&](int64_t r0, int64_t n, size_t e) {
              be.zero(dhact_.data(), n * Fe);
              kernels::matmul_backward(dhact_.data(), gw.expert_proj[e], nullptr, dy + r0 * C,
                                       a.hact + r0 * Fe, w.expert_proj[e], n, Fe, C);
              be.zero(dh_.data(), n * 2 * Fe);
              kernels::swiglu_backward(dh_.data(), a.h + r0 * 2 * Fe, dhact_.data(), n, Fe);
              be.zero(dx + r0 * C, n * C);
              kernels::matmul_backward(dx + r0 * C, gw.expert_fc[e], nullptr, dh_.data(),
                                       x + r0 * C, w.expert_fc[e], n, C, 2 * Fe);
            });
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
