// The FFN of a mixture-of-experts layer on one rank, as Megatron-Core's MoELayer runs it with the
// all-to-all token dispatcher and grouped GEMMs (megatron/core/transformer/moe/: router.py,
// token_dispatcher.py MoEAlltoAllTokenDispatcher, experts.py TEGroupedMLP, shared_experts.py).
// The rank routes its T = seq_len b / (cp tp) tokens (sequence-parallel: each TP rank its own
// share); after the all-to-all over ep and the all-gather over etp it holds R = etp T top_k
// token rows (times the imbalance on the busiest rank) for its num_experts / ep experts, each
// expert's FFN split over etp.
#include <algorithm>
#include <string>

#include "op_build.hpp"

namespace parallax {
namespace op_build {
namespace {

// Tokens this rank routes: its sequence-parallel share of the micro-batch's seq_len / cp tokens.
double routed_tokens(const LayerDims& L) { return L.s * L.b / (L.sp ? L.t : 1.0); }

// A grouped linear layer: `experts` independent products of m token rows each (TEGroupedLinear;
// its efficiency is the GEMM curve's at those shapes, so few tokens per expert run slowly).
void add_grouped_linear(std::vector<Op>& fwd, std::vector<Op>& bwd, const std::string& name,
                        const LayerDims& L, double experts, double m, double n, double k) {
  add_gemm(fwd, name, Phase::forward, {experts, m, n, k});
  add_gemm(bwd, name + ".dgrad", Phase::backward_data, {experts, m, k, n});
  add_gemm(bwd, name + ".wgrad", Phase::backward_weight, {experts, k, n, m});
  if (!L.fp8) return;
  fwd[fwd.size() - 1].fp8 = bwd[bwd.size() - 1].fp8 = bwd[bwd.size() - 2].fp8 = true;
  // Transformer Engine's grouped linear casts its input rows (forward) and output-gradient rows
  // (backward) to fp8 as a dense linear does (Fp8Recipe), per expert weight per micro-batch or
  // per iteration as the recipe says.
  const double per_elem = fp8_cast_bytes_per_element(L.recipe, L.e);
  const double x = experts * m * k, dy = experts * m * n;
  add_mem(fwd, "fp8_cast." + name, Phase::forward, x * per_elem, 2 * x);
  if (L.recipe.weight_cast_per_micro_batch)
    add_mem(fwd, "fp8_cast." + name + ".weight", Phase::forward, experts * k * n * per_elem, 2 * experts * k * n);
  add_mem(bwd, "fp8_cast." + name + ".bwd", Phase::backward_data, dy * per_elem, 2 * dy);
}

// The FFN's activation on `elems` elements of its hidden width (SwiGLU or bias + GeLU).
void add_activation(std::vector<Op>& fwd, std::vector<Op>& bwd, const ModelSpec& m,
                    const LayerDims& L, const std::string& suffix, double elems) {
  if (m.activation == Activation::swiglu) {
    add_mem(fwd, "moe.swiglu" + suffix, Phase::forward, elems * L.eb.swiglu_fwd, 6 * elems);
    add_mem(bwd, "moe.swiglu" + suffix + ".bwd", Phase::backward_data, elems * L.eb.swiglu_bwd, 10 * elems);
  } else {
    add_mem(fwd, "moe.bias_gelu" + suffix, Phase::forward, elems * 2 * L.e, 10 * elems);
    add_mem(bwd, "moe.bias_gelu" + suffix + ".bwd", Phase::backward_data, elems * 3 * L.e, 14 * elems);
  }
}

}  // namespace

void add_moe_ffn(std::vector<Op>& fwd, std::vector<Op>& bwd, const ModelSpec& m, const LayerDims& L) {
  const MoeSpec& x = m.moe;
  const double T = routed_tokens(L), k = static_cast<double>(x.top_k), e = L.e;
  const double E = static_cast<double>(x.num_experts), h = L.h;
  const double gate = m.activation == Activation::swiglu ? 2 : 1;
  // Router: a bias-free h x E linear on the rank's tokens, then the fp32 scores and top-k: the
  // logits read, the fp32 scores written and read again, k (probability, index) pairs written.
  add_linear(fwd, bwd, "moe.router", T, E, h);
  add_mem(fwd, "moe.router_topk", Phase::forward, T * E * (e + 8) + T * k * 12, 5 * T * E);
  add_mem(bwd, "moe.router_topk.bwd", Phase::backward_data, T * E * (8 + e), 4 * T * E);
  // Permutation: each of the T k assignments copies its token's row into expert order (a row
  // read and a row written); backward sums the k gradient rows of each token back.
  const double rows = T * k * h;
  add_mem(fwd, "moe.permute", Phase::forward, rows * 2 * e, 0);
  add_mem(bwd, "moe.permute.bwd", Phase::backward_data, (rows + T * h) * e, rows);
  // The experts: R rows over num_experts / ep local experts, each FFN 1/etp of its width.
  const double R = L.etp * T * k * L.imbalance;
  const double local = E / L.ep, per_expert = R / local;
  const double fe = static_cast<double>(x.expert_ffn_hidden) / L.etp;
  add_grouped_linear(fwd, bwd, "moe.fc1", L, local, per_expert, gate * fe, h);
  add_activation(fwd, bwd, m, L, "", R * fe);
  add_grouped_linear(fwd, bwd, "moe.fc2", L, local, per_expert, h, fe);
  // Un-permutation: the k expert outputs of each token weighted by their probabilities and
  // summed; backward scatters the gradient to the k rows and reads them for the probabilities'.
  add_mem(fwd, "moe.unpermute", Phase::forward, (rows + T * h) * e, 2 * rows);
  add_mem(bwd, "moe.unpermute.bwd", Phase::backward_data, (T * h + 2 * rows) * e, 2 * rows);
  if (x.shared_experts == 0) return;
  // Shared experts: one dense MLP of their summed width, split over tp like the dense MLP, on
  // the whole micro-batch's tokens (gathered from the sequence-parallel shards).
  const double sb = L.s * L.b;
  const double fs = static_cast<double>(x.shared_experts * x.shared_expert_ffn_hidden) / L.t;
  add_layer_linear(fwd, bwd, "moe.shared_fc1", L, TpSplit::column, sb, gate * fs, h);
  add_activation(fwd, bwd, m, L, ".shared", sb * fs);
  add_layer_linear(fwd, bwd, "moe.shared_fc2", L, TpSplit::row, sb, h, fs);
}

}  // namespace op_build

MoeLayerComm moe_layer_comm(const ModelSpec& m, const ShardShape& s) {
  MoeLayerComm c;
  const op_build::LayerDims L = op_build::dims(m, s);
  c.tokens = op_build::routed_tokens(L);
  const double rows = c.tokens * static_cast<double>(m.moe.top_k) * L.h * L.e * L.imbalance;
  c.a2a_bytes = s.ep > 1 ? rows : 0;
  c.etp_bytes = s.etp > 1 ? L.etp * rows : 0;
  c.dispatcher = s.moe_dispatcher;
  c.token_bytes = s.ep > 1 ? c.tokens * L.h * L.e * L.imbalance : 0;
  c.experts = static_cast<double>(m.moe.num_experts);
  c.top_k = static_cast<double>(m.moe.top_k);
  return c;
}

double experts_missed_probability(double experts, double top_k, double q) {
  double p = 1;
  for (double i = 0; i < top_k; ++i) p *= std::max(0.0, experts - q - i) / (experts - i);
  return p;
}

MoeDispatchVolume moe_dispatch_volume(const MoeLayerComm& c, int64_t ranks, int64_t per_node, int64_t nodes) {
  MoeDispatchVolume v;
  if (ranks <= 1) return v;
  const double n = static_cast<double>(ranks), k = static_cast<double>(per_node);
  const double node_hit = 1 - experts_missed_probability(c.experts, c.top_k, c.experts * k / n);
  const double rank_hit = 1 - experts_missed_probability(c.experts, c.top_k, c.experts / n);
  v.network_bytes = nodes > 1 ? c.token_bytes * static_cast<double>(nodes - 1) * node_hit : 0;
  v.nvlink_bytes = c.token_bytes * n * rank_hit * (k - 1) / k;
  return v;
}

}  // namespace parallax
