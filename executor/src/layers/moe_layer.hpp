#pragma once
// The mixture-of-experts FFN of one MoE layer on the CPU backend (issue 27), routed as
// Megatron-Core's TopKRouter (megatron/core/transformer/moe/router.py, moe_utils.py):
//   logits = ln @ router^T                                (N, E), a bias-free linear
//   softmax: the top-k logits (ties: the lower expert index), probs = softmax over those k
//   sigmoid: s = sigmoid(logits), the top-k of s, probs = s_k / (sum_k s_k + 1e-20) (k = 1: s_k)
//   out = sum_k probs_k * expert_{e_k}(ln) + shared(ln)   dropless: every token reaches its k
//   experts
// Each expert (and the shared experts, one MLP of shared_experts times the width) is a SwiGLU MLP
// sharded over tp as the dense MLP is: `out` is this rank's partial sum, which the chunk reduces
// over tp like the dense MLP's c_proj output. The gradient of a probability needs the whole
// expert output, so backward sums the (N, k) partial dot products over tp.
//
// Load balancing (switch_load_balancing_loss_func) over the micro-batch's T = N cp tokens:
//   aux = coeff E / (k T^2) sum_i f_i sum_x scores(x, i)
// with f_i the tokens routed to expert i (summed over the cp ranks, no gradient) and scores the
// softmax of all E logits (sigmoid: s / (sum s + 1e-20)). The objective is the mean over the
// global batch's micro-batches of cross-entropy plus every layer's aux, so aux enters the loss
// and its gradient with weight 1 / (micro-batches * dp).
//
// Expert parallelism (ep > 1, ProcessGroups::ep): rank r of the ep group holds experts
// [r El, (r+1) El), El = E / ep. Every rank routes its own N tokens; an all-to-all-v over the ep
// group sends each (token, expert) row to the expert's rank (rows grouped by expert, tokens
// ascending: MoEAlltoAllTokenDispatcher's permute, then all-to-all), which runs its experts over
// the rows of every peer (expert by expert, peers in rank order) and sends the outputs back by
// the reverse all-to-all; backward sends the outputs' gradients the same way and the inputs'
// gradients back. The experts' weight gradients then sum the rows of all ep peers; the trainer
// reduces them over the expert-data-parallel group. The owner keeps the received rows (MoeActs::xr)
// and their counts for backward.
//
// Deterministic: tokens are grouped by expert in token order, each expert's rows through one
// GEMM, and every sum runs in a fixed order; the routing is recomputed from the kept logits.
#include <cstdint>
#include <vector>

#include "backend_cpu.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/executor/comm/groups.hpp"
#include "parallax/executor/layers/chunk.hpp"

namespace parallax::exec {

// One MoE layer's sizes on one rank.
struct MoeShape {
  int64_t N = 0, C = 0;      // rows (B T of this cp rank) and hidden size
  int64_t E = 0, k = 0;      // experts, experts per token
  int64_t Fe = 0;            // local width of a routed expert (expert_ffn_hidden / tp)
  int64_t Fs = 0;            // local width of the shared experts' MLP; 0 without them
  int64_t row0 = 0, Ns = 0;  // the rows this rank holds outside the TP regions (Dims)
  int64_t cp = 1;            // a micro-batch's tokens are N cp
  int64_t ep = 1, ep_rank = 0;  // expert parallelism: this rank holds experts [ep_rank El, ...)
  int64_t El = 0;               // experts per ep rank, E / ep
  int64_t R = 0;                // the most (token, expert) rows this rank's experts can receive
  bool sigmoid = false;
  double aux_coeff = 0;
  double aux_weight = 0;  // 1 / (micro-batches * dp): the aux loss's weight in the objective
};
MoeShape moe_shape(const ModelSpec& m, const PlanSpec& p, const Dims& d, int64_t ep_rank);

// One MoE layer's activations kept for backward (carved from the stash; MoeLayer::act_floats).
struct MoeActs {
  float* logits = nullptr;  // (N, E)
  float* probs = nullptr;   // (N, k)
  float* tokens = nullptr;  // (E) tokens routed to each expert over the micro-batch
  float* h = nullptr;       // (R, 2 Fe) this rank's experts' gate | up, rows grouped by expert
  float* hact = nullptr;    // (R, Fe)
  float* y = nullptr;       // (N k, C) the (partial) outputs of this rank's tokens' experts
  float* counts = nullptr;  // ep > 1: (ep, El) rows received from each peer for each local expert
  float* xr = nullptr;      // ep > 1: (R, C) the received rows, grouped by local expert
  float* sh = nullptr;      // (N, 2 Fs) shared experts
  float* shact = nullptr;   // (N, Fs)
};

class MoeLayer {
 public:
  explicit MoeLayer(const MoeShape& s);

  int64_t act_floats() const;
  MoeActs layout(float* base) const;  // act_floats() floats from base

  // out (N, C) = this rank's partial FFN output of ln (N, C). aux_acc: when set, the layer's aux
  // loss times its weight is added (tp rank 0 of each cp rank, in the forward that counts).
  void forward(float* out, const float* ln, const LayerWeightsT<float>& w, const MoeActs& a,
               CpuBackend& be, Comm& comm, const ProcessGroups& g, double* aux_acc);
  // dln (N, C) += the experts' and shared experts' (partial over tp) gradient of dout (N, C);
  // keeps the router logits' gradient for backward_router.
  void backward_experts(float* dln, const float* dout, const float* ln,
                        const LayerWeightsT<float>& w, const LayerWeightsT<float>& gw,
                        const MoeActs& a, CpuBackend& be, Comm& comm, const ProcessGroups& g);
  // The router's share of rows [row0, row0 + Ns): drows (Ns, C) += dlogits @ router, and the
  // router weight's gradient from those rows (sequence parallelism: summed over tp later).
  void backward_router(float* drows, const float* ln, const LayerWeightsT<float>& w,
                       const LayerWeightsT<float>& gw, CpuBackend& be);

 private:
  // Top-k experts of every token from the logits, and the tokens grouped by expert.
  void route(const float* logits);
  // rows (N k, C) = the rows of ln in order_'s layout (each token once per chosen expert).
  void permute(float* rows, const float* ln, CpuBackend& be) const;
  // The row counts of the exchange (send_rows_, recv_rows_) and the local experts' rows
  // (em_first_) from the routing and, with ep > 1, the received counts.
  void plan_exchange(const float* counts);
  // Rows (of `width` floats) received per peer and expert (pm) <-> grouped per expert (em).
  void peer_to_expert(float* em, const float* pm, int64_t width) const;
  void expert_to_peer(float* pm, const float* em, int64_t width) const;
  // Rows in order_'s layout to the experts' ranks: into `em` (grouped by local expert).
  void dispatch(float* em, const float* rows, Comm& comm, const ProcessGroups& g,
                const char* what);
  // f(first row, rows, global expert index) for each local expert that received rows.
  template <class F>
  void for_local_experts(F f) const {
    for (int64_t j = 0; j < s_.El; ++j) {
      const int64_t r0 = em_first_[static_cast<size_t>(j)];
      const int64_t n = em_first_[static_cast<size_t>(j + 1)] - r0;
      if (n > 0) f(r0, n, static_cast<size_t>(s_.ep_rank * s_.El + j));
    }
  }
  // This rank's experts over the rows grouped by local expert: y (R, C) from x (R, C); backward,
  // dx (R, C) from dy (R, C) and the experts' weight gradients.
  void experts_forward(float* y, const float* x, const MoeActs& a, const LayerWeightsT<float>& w,
                       CpuBackend& be);
  void experts_backward(float* dx, const float* dy, const float* x, const MoeActs& a,
                        const LayerWeightsT<float>& w, const LayerWeightsT<float>& gw,
                        CpuBackend& be);
  // The reverse: rows grouped by local expert back to their tokens' ranks, in order_'s layout.
  void combine(float* rows, const float* em, Comm& comm, const ProcessGroups& g, const char* what);
  void aux_score_grads(float* dlogits_row, const float* logits_row, const float* tokens) const;

  MoeShape s_;
  std::vector<int32_t> expert_;  // (N, k) chosen experts, in descending score
  std::vector<int32_t> order_;   // (N k) slots n k + j grouped by expert, tokens ascending
  std::vector<int32_t> pos_;     // (N k) where slot n k + j sits in order_
  std::vector<int64_t> first_;   // (E + 1) each expert's first row in order_
  std::vector<int64_t> send_rows_, recv_rows_;  // (ep) rows to and from each ep peer
  std::vector<int64_t> em_first_;               // (El + 1) each local expert's first received row
  std::vector<int64_t> pm_at_, em_at_, len_;    // (ep, El) each (peer, expert) block's rows
  // Scratch: rows in order_'s layout (src_, src2_), rows as received (pm_), per local expert
  // (em_, em2_), and backward temporaries.
  std::vector<float> src_, src2_, pm_, em_, em2_, dhact_, dh_, dprob_, dlogits_, dshact_, dsh_;
};

}  // namespace parallax::exec
