#include "parallax/costmodel/iteration_costs.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "op_cost.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/topologies/topology.hpp"

namespace parallax {
namespace {

using op_cost::attention_times;
using op_cost::linear_gemm_time;
using op_cost::optimizer_rate;
using op_cost::phase_times;
using op_cost::PhaseTimes;
using op_cost::Rates;
using op_cost::rates_for;

// A collective on one group: the profile's fit for its kind, span and size when it has one
// (calibration), otherwise the topology's estimate.
double coll_s(const EfficiencyProfile& pf, const GroupCost& g, Collective op, double bytes) {
  if (g.size <= 1 || bytes <= 0) return 0;
  if (const CollectiveFit* f = pf.collective_fit(op, GroupLayout{g.size, g.nodes, g.per_node}))
    return fitted_time_s(*f, g.size, bytes);
  return collective_time_s(g, op, bytes);
}

double max_coll_s(const EfficiencyProfile& pf, const std::vector<GroupCost>& groups, Collective op,
                  double bytes) {
  double t = 0;
  for (const GroupCost& g : groups) t = std::max(t, coll_s(pf, g, op, bytes));
  return t;
}

double max_p2p_s(const EfficiencyProfile& pf, const std::vector<P2pCost>& costs, double bytes) {
  double t = 0;
  for (const P2pCost& c : costs) {
    const GroupLayout pair = c.crosses_nodes ? GroupLayout{2, 2, 1} : GroupLayout{2, 1, 2};
    const CollectiveFit* f = pf.collective_fit(Collective::send_recv, pair);
    t = std::max(t, f ? fitted_time_s(*f, 2, bytes) : p2p_time_s(c, bytes));
  }
  return t;
}

// TP communication of an op list on the slowest of a stage's TP groups.
double comm_time(const EfficiencyProfile& pf, const std::vector<CommOp>& ops,
                 const std::vector<GroupCost>& tp) {
  double worst = 0;
  for (const GroupCost& g : tp) {
    double t = 0;
    for (const CommOp& op : ops) {
      switch (op.kind) {
        case CommKind::tp_all_reduce: t += coll_s(pf, g, Collective::all_reduce, op.bytes); break;
        case CommKind::tp_reduce_scatter: t += coll_s(pf, g, Collective::reduce_scatter, op.bytes); break;
        case CommKind::tp_all_gather: t += coll_s(pf, g, Collective::all_gather, op.bytes); break;
        case CommKind::none: break;
      }
    }
    worst = std::max(worst, t);
  }
  return worst;
}

// An MoE layer's compute and TP traffic (recomputed per the plan and not), and its expert-group
// traffic sizes.
struct MoeLayers {
  PhaseTimes rec, plain;
  const std::vector<CommOp>* comm_rec = nullptr;  // the shard's op lists (ShardOps)
  const std::vector<CommOp>* comm_plain = nullptr;
  double gemm_rec = 0, gemm_plain = 0;  // linear GEMMs (what TP overlap runs under)
  MoeLayerComm comm;
};

MoeLayers moe_layers(const ShardOps& ops, const Rates& r) {
  MoeLayers x;
  x.rec = phase_times(ops.moe_rec, r);
  x.plain = phase_times(ops.moe_plain, r);
  x.gemm_rec = linear_gemm_time(ops.moe_rec, r);
  x.gemm_plain = linear_gemm_time(ops.moe_plain, r);
  x.comm_rec = &ops.moe_comm_rec;
  x.comm_plain = &ops.moe_comm_plain;
  x.comm = ops.moe_comm;
  return x;
}

// A stage's MoE layers: how many of each kind, and their TP traffic per micro-batch.
struct StageMoe {
  double n_rec = 0, n_plain = 0;  // the stage's recomputed and other layers (all kinds)
  double n_moe = 0;               // its MoE layers
  bool full_recompute = false;    // the recomputed layers' forward runs twice
  double tp_s = 0;                // the MoE layers' TP traffic, before overlap
};

struct MoeHostWait {
  double forward_s = 0, backward_s = 0;
};

// The GPU's wait for the host in one micro-batch's MoE layers. The token dispatcher waits for the
// tokens per expert on the host in every MoE layer's forward (Megatron-Core's MoEAlltoAllTokenDispatcher
// copies them with .to("cpu") and synchronizes before the all-to-all), so the host never runs more
// than a layer ahead: a layer takes the longer of its GPU work and the host's time to issue it.
// The GPU work of one MoE layer: its compute (recomputed share included), its expert traffic and
// its share of the stage's exposed TP time. The host issues a fully recomputed layer's forward
// twice: its time grows by the forward's share, taken as the GPU work's (the kernels a pass
// launches follow its GEMMs: one per linear layer forward, two backward). The wait splits between
// forward and backward as the GPU work does.
MoeHostWait moe_host_wait(double host_s, const MoeLayers& moe, const StageTime& st,
                          double tp_exposed_fraction, const StageMoe& n) {
  // MoE layers are the same share of the recomputed and of the other layers, so one MoE layer's
  // compute is the layer-weighted mean of the two kinds.
  const double layers = n.n_rec + n.n_plain;
  const double fwd = (n.n_rec * moe.rec.forward + n.n_plain * moe.plain.forward) / layers +
                     st.ep_forward_s / n.n_moe;
  const double bwd = (n.n_rec * (moe.rec.backward + moe.rec.recompute) +
                      n.n_plain * (moe.plain.backward + moe.plain.recompute)) / layers +
                     st.ep_backward_s / n.n_moe;
  const double tp = n.tp_s * tp_exposed_fraction / n.n_moe;
  const double gpu = fwd + bwd + tp;
  const double plain = moe.plain.forward + moe.plain.backward;
  const double rerun = n.full_recompute ? n.n_rec / layers : 0;  // the layers issued twice
  const double host = host_s * (1 + rerun * (plain > 0 ? moe.plain.forward / plain : 0));
  const double wait = n.n_moe * std::max(0.0, host - gpu);
  const double fwd_share = fwd + bwd > 0 ? fwd / (fwd + bwd) : 0.5;
  return {wait * fwd_share, wait * (1 - fwd_share)};
}

// One stage's data-parallel traffic on the slowest of its DP groups (ZeRO stage p.zero):
//   once per iteration: the gradient all-reduce (ZeRO-0), reduce-scatter (ZeRO-1) and the
//   parameter all-gather after the optimizer step (ZeRO-1/2);
//   per micro-batch: ZeRO-2 reduce-scatters each micro-batch's gradients; ZeRO-3 / FSDP gathers
//   each layer's parameters for the forward and again for the backward and reduce-scatters each
//   layer's gradients (the unit outside the layers, embeddings and head, once each way).
struct DpTraffic {
  double reduce_s = 0;  // per iteration, after the last backward
  double gather_s = 0;  // per iteration, after the optimizer step
  double mb_reduce_s = 0;  // ZeRO-2: per micro-batch
  double layer_gather_s = 0, layer_reduce_s = 0;  // ZeRO-3: one layer
  double root_gather_s = 0, root_reduce_s = 0;    // ZeRO-3: the stage's non-layer parameters
};

DpTraffic dp_traffic(const EfficiencyProfile& pf, const PlanSpec& p, int64_t ranks,
                     const std::vector<GroupCost>& dp, double params, double layer_params,
                     double root, double grad_elem_bytes, double weight_elem_bytes) {
  DpTraffic t;
  if (ranks <= 1 || params <= 0) return t;
  const double grads = params * grad_elem_bytes;
  const double weights = params * weight_elem_bytes;
  switch (p.zero) {
    case 0: t.reduce_s = max_coll_s(pf, dp, Collective::all_reduce, grads); break;
    case 1:
      t.reduce_s = max_coll_s(pf, dp, Collective::reduce_scatter, grads);
      t.gather_s = max_coll_s(pf, dp, Collective::all_gather, weights);
      break;
    case 2:
      t.mb_reduce_s = max_coll_s(pf, dp, Collective::reduce_scatter, grads);
      t.gather_s = max_coll_s(pf, dp, Collective::all_gather, weights);
      break;
    default: {
      t.layer_gather_s = max_coll_s(pf, dp, Collective::all_gather, layer_params * weight_elem_bytes);
      t.layer_reduce_s = max_coll_s(pf, dp, Collective::reduce_scatter, layer_params * grad_elem_bytes);
      t.root_gather_s = max_coll_s(pf, dp, Collective::all_gather, root * weight_elem_bytes);
      t.root_reduce_s = max_coll_s(pf, dp, Collective::reduce_scatter, root * grad_elem_bytes);
      break;
    }
  }
  return t;
}

// One layer's context-parallel ring on a stage (CpRingLayer): each of the cp - 1 steps hides
// under one of the cp equal attention blocks (causal load balancing gives every step two of the
// 2cp x 2cp chunk blocks at or below the diagonal).
CpRingLayer cp_ring_layer(const EfficiencyProfile& pf, const ModelSpec& m, const ShardShape& sh,
                          const std::vector<P2pCost>& ring, const PhaseTimes& attention,
                          double slowdown) {
  CpRingLayer c;
  if (sh.cp <= 1) return c;
  const double kv_heads = static_cast<double>(m.kv_head_count()) / static_cast<double>(sh.tp);
  c.kv_bytes = 2 * shard_tokens(m, sh) * kv_heads * static_cast<double>(m.head_dim()) * sh.act_bytes;
  c.step_forward_s = max_p2p_s(pf, ring, c.kv_bytes);
  c.step_backward_s = max_p2p_s(pf, ring, 2 * c.kv_bytes);
  const double steps = static_cast<double>(sh.cp - 1), blocks = static_cast<double>(sh.cp);
  c.exposed_forward_s = steps * overlapped_time_s(c.step_forward_s, attention.forward / blocks, 0, slowdown);
  c.exposed_backward_s = steps * overlapped_time_s(c.step_backward_s, attention.backward / blocks, 0, slowdown);
  return c;
}

// One MoE layer's expert-group traffic on a stage's slowest groups, per micro-batch: forward
// the dispatch and combine all-to-alls over ep and, with etp > 1, the all-gather and reduce-
// scatter over etp; backward the same again for the gradients.
struct ExpertTraffic {
  double all_to_all_s = 0;  // one dispatch (or combine)
  double bytes = 0;         // its size: the nccl-tests size (alltoall), else what one rank sends
  double forward_s = 0;
  double backward_s = 0;
};

ExpertTraffic expert_traffic(const EfficiencyProfile& pf, const PlanComm& comm, int64_t stage,
                             const MoeLayerComm& c) {
  ExpertTraffic x;
  const auto k = static_cast<size_t>(stage);
  if (c.a2a_bytes > 0 && !comm.ep_by_stage.empty())
    for (const GroupCost& g : comm.ep_by_stage[k]) {
      // alltoall: the NCCL all-to-all-v of every routed row. A deduplicating dispatcher: its bytes
      // to node peers over NVLink and to other nodes over the NIC, at once (moe_dispatch_volume).
      double t = 0, bytes = c.a2a_bytes;
      if (deduplicating(c.dispatcher)) {
        const MoeDispatchVolume v = moe_dispatch_volume(c, g.size, g.per_node, g.nodes);
        t = two_level_exchange_time_s(g, v.nvlink_bytes, v.network_bytes);
        bytes = v.nvlink_bytes + v.network_bytes;
      } else {
        t = all_to_all_time_s(g, c.a2a_bytes);
      }
      if (t >= x.all_to_all_s) {
        x.all_to_all_s = t;
        x.bytes = bytes;
      }
    }
  double etp = 0;
  if (c.etp_bytes > 0) {
    // etp equal to tp without expert parallelism: the TP groups are the expert TP groups.
    const auto& groups = comm.etp_by_stage.empty() ? comm.tp_by_stage[k] : comm.etp_by_stage[k];
    etp = max_coll_s(pf, groups, Collective::all_gather, c.etp_bytes) +
          max_coll_s(pf, groups, Collective::reduce_scatter, c.etp_bytes);
  }
  x.forward_s = 2 * x.all_to_all_s + etp;
  x.backward_s = x.forward_s;
  return x;
}

}  // namespace

double overlapped_time_s(double comm_s, double under_s, double min_exposed_s, double slowdown) {
  if (comm_s <= 0) return 0;
  const double exposed = std::min(comm_s, std::max(min_exposed_s, comm_s - std::max(0.0, under_s)));
  return exposed + slowdown * (comm_s - exposed);
}

double overlap_slowdown(const GpuSpec& gpu, const StackOverlap& overlap) {
  if (gpu.sm_count <= 0 || overlap.comm_ctas <= 0) return 0;
  return std::min(1.0, static_cast<double>(overlap.comm_ctas) / static_cast<double>(gpu.sm_count));
}

LayerKey layer_key(const ModelSpec& m, int64_t tp) {
  return {m.seq_len, m.hidden, m.heads, m.ffn_hidden, m.vocab, tp};
}

double cache_resident_fraction(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                               const EfficiencyProfile& prof) {
  if (prof.cache_bytes_per_rank <= 0) return 0;
  double working_set = 0;
  for (const StageMemory& s : stage_memory(m, j, p))
    working_set = std::max(working_set, s.weights_bytes + s.grads_bytes + s.activations_bytes + s.buffers_bytes);
  return working_set > 0 ? std::min(1.0, prof.cache_bytes_per_rank / working_set) : 1.0;
}

double optimizer_time_s(double params, const GpuSpec& gpu, const JobSpec& j,
                        const EfficiencyProfile& prof) {
  return params * kOptimizerBytesPerParam / optimizer_rate(rates_for(gpu, j, prof), prof);
}

IterationCosts iteration_costs(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                               const PlanSpec& p, const EfficiencyProfile& prof) {
  const Topology topo(c);
  return iteration_costs(m, topo, j, p, prof);
}

IterationCosts iteration_costs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                               const PlanSpec& plan, const EfficiencyProfile& prof) {
  return iteration_costs(m, topo, j, plan, prof, plan_ops(m, j, plan, topo.spec().gpu));
}

namespace {

// What every stage's cost terms share: the plan as the stack runs it, its ops' times under the
// profile, the stack's overlaps, and the traffic's element sizes.
struct PlanCostInputs {
  const ModelSpec& m;
  const JobSpec& j;
  const PlanSpec& p;  // with the ZeRO stage the stack runs
  const EfficiencyProfile& prof;
  const ShardOps& ops;
  const PlanComm& comm;
  PhaseTimes lt_rec, lt_plain;  // one dense layer, recomputed per the plan and not
  PhaseTimes emb, head;         // the embedding (first stage) and the head (last stage)
  MoeLayers moe;                // one MoE layer (mixtures of experts)
  PhaseTimes attention;         // a layer's attention core (what the CP ring runs under; cp > 1)
  double slowdown;              // of compute under an overlapped collective
  // Transformer Engine's TP overlap splits the GEMMs beside each all-gather / reduce-scatter of
  // sequence parallelism; without SP there is nothing it overlaps.
  bool tp_overlapped;
  double gemm_rec, gemm_plain;  // a dense layer's linear GEMMs (what TP overlap runs under)
  ParamBytes pb;
  double grad_elem;     // bytes of one gradient element
  double layer_params;  // one layer's parameters on a rank
  double opt_rate;      // the optimizer step's bytes per second
};

// One stage's layers: how many (recomputed and not), the share f of MoE layers among both kinds,
// and its TP groups.
struct StageLayers {
  int64_t k = 0;
  int64_t layers = 0;
  double n_rec = 0, n_plain = 0;
  double f = 0;
  const std::vector<GroupCost>* tp_groups = nullptr;
};

StageLayers layers_of_stage(const PlanCostInputs& in, int64_t k) {
  const PlanSpec& p = in.p;
  StageLayers s;
  s.k = k;
  s.layers = stage_layers(in.m.layers, p, k);
  const int64_t recomputed =
      p.recompute == Recompute::full && p.recompute_layers > 0 ? p.recompute_layers : s.layers;
  s.n_rec = static_cast<double>(p.recompute == Recompute::full ? recomputed : s.layers);
  s.n_plain = static_cast<double>(s.layers) - s.n_rec;
  s.tp_groups = &in.comm.tp_by_stage[static_cast<size_t>(k)];
  // MoE layers are the same share f of the recomputed and of the other layers.
  s.f = s.layers > 0 ? static_cast<double>(stage_moe_layers(in.m, p, k)) / static_cast<double>(s.layers) : 0;
  return s;
}

// Compute: the stage's layers (dense and MoE mixed by their share), its embedding or head.
void compute_term(const PlanCostInputs& in, const StageLayers& s, StageTime& st) {
  const double f = s.f;
  auto mixed = [f](const PhaseTimes& dense, const PhaseTimes& moe_layer) {
    return PhaseTimes{(1 - f) * dense.forward + f * moe_layer.forward,
                      (1 - f) * dense.backward + f * moe_layer.backward,
                      (1 - f) * dense.recompute + f * moe_layer.recompute};
  };
  const PhaseTimes st_rec = mixed(in.lt_rec, in.moe.rec), st_plain = mixed(in.lt_plain, in.moe.plain);
  st.forward_s = s.n_rec * st_rec.forward + s.n_plain * st_plain.forward;
  st.backward_s = s.n_rec * st_rec.backward + s.n_plain * st_plain.backward;
  st.recompute_s = s.n_rec * st_rec.recompute;
  if (s.k == 0) {
    st.forward_s += in.emb.forward;
    st.backward_s += in.emb.backward;
  }
  if (s.k == in.p.pp - 1) {
    st.forward_s += in.head.forward;
    st.backward_s += in.head.backward;
  }
}

// A stage's TP traffic per micro-batch, before overlap, and its MoE layers' share of one layer.
struct StageTp {
  double tp_s = 0;
  double moe_rec_s = 0, moe_plain_s = 0;  // one MoE layer's, recomputed and not
};

StageTp tp_traffic(const PlanCostInputs& in, const StageLayers& s) {
  const std::vector<GroupCost>& groups = *s.tp_groups;
  const double f = s.f;
  StageTp t;
  t.moe_rec_s = f > 0 ? comm_time(in.prof, *in.moe.comm_rec, groups) : 0;
  t.moe_plain_s = f > 0 ? comm_time(in.prof, *in.moe.comm_plain, groups) : 0;
  const double tp_rec = (1 - f) * comm_time(in.prof, in.ops.comm_rec, groups) + f * t.moe_rec_s;
  const double tp_plain = (1 - f) * comm_time(in.prof, in.ops.comm_plain, groups) + f * t.moe_plain_s;
  t.tp_s = s.n_rec * tp_rec + s.n_plain * tp_plain;
  if (s.k == 0) t.tp_s += comm_time(in.prof, in.ops.embedding_comm, groups);
  if (s.k == in.p.pp - 1) t.tp_s += comm_time(in.prof, in.ops.head_comm, groups);
  return t;
}

// TP: the traffic under the linear GEMMs where the stack overlaps it, else the profile's
// exposed share.
void tp_term(const PlanCostInputs& in, const StageLayers& s, const StageTp& t, StageTime& st) {
  const double f = s.f;
  const double gemm = s.n_rec * ((1 - f) * in.gemm_rec + f * in.moe.gemm_rec) +
                      s.n_plain * ((1 - f) * in.gemm_plain + f * in.moe.gemm_plain);
  st.tp_comm_s = in.tp_overlapped ? overlapped_time_s(t.tp_s, gemm, 0, in.slowdown)
                                  : (1 - in.prof.tp_overlap) * t.tp_s;
}

// EP: the expert-group traffic of every MoE layer, not overlapped (Megatron-Core's default:
// --overlap-moe-expert-parallel-comm and --moe-shared-expert-overlap off); full recompute re-runs
// the recomputed layers' dispatch and combine. Keeps the slowest dispatch of any stage in out.
void ep_term(const PlanCostInputs& in, const StageLayers& s, StageTime& st, IterationCosts& out) {
  if (s.f <= 0) return;
  const ExpertTraffic x = expert_traffic(in.prof, in.comm, s.k, in.moe.comm);
  const double n_moe = s.f * static_cast<double>(s.layers);
  st.ep_forward_s = n_moe * x.forward_s;
  st.ep_backward_s = n_moe * x.backward_s + s.f * (in.p.recompute == Recompute::full ? s.n_rec : 0) * x.forward_s;
  if (x.all_to_all_s > out.ep_all_to_all_s) {
    out.ep_all_to_all_s = x.all_to_all_s;
    out.ep_all_to_all_bytes = x.bytes;
  }
}

// CP: the ring's sends each attention block does not hide; full recompute re-runs each
// recomputed layer's forward, ring included.
void cp_term(const PlanCostInputs& in, const StageLayers& s, StageTime& st) {
  if (in.p.cp <= 1) return;
  const CpRingLayer ring = cp_ring_layer(in.prof, in.m, in.ops.shard, in.comm.cp_ring_by_stage[static_cast<size_t>(s.k)],
                                         in.attention, in.slowdown);
  const double rerun = in.p.recompute == Recompute::full ? s.n_rec : 0;
  st.cp_forward_s = static_cast<double>(s.layers) * ring.exposed_forward_s;
  st.cp_backward_s = static_cast<double>(s.layers) * ring.exposed_backward_s + rerun * ring.exposed_forward_s;
}

// The host wait of the stage's MoE layers (moe_host_wait), after its other terms.
void host_term(const PlanCostInputs& in, const StageLayers& s, const StageTp& t, StageTime& st) {
  if (s.f <= 0 || in.prof.moe_layer_host_s <= 0) return;
  const MoeHostWait w = moe_host_wait(in.prof.moe_layer_host_s, in.moe, st, t.tp_s > 0 ? st.tp_comm_s / t.tp_s : 0,
                                      {s.n_rec, s.n_plain, s.f * static_cast<double>(s.layers),
                                       in.p.recompute == Recompute::full,
                                       s.f * (s.n_rec * t.moe_rec_s + s.n_plain * t.moe_plain_s)});
  st.host_forward_s = w.forward_s;
  st.host_backward_s = w.backward_s;
}

// A stage's parameters on one rank: all, the routed experts', and those outside the layers.
struct StageParams {
  double params = 0, expert_params = 0, non_layer = 0;
};

// The stage's data-parallel traffic: the dense parameters' over dp x cp and the routed
// experts' over the expert data-parallel ranks.
DpTraffic stage_dp_traffic(const PlanCostInputs& in, const StageLayers& s, const StageParams& sp) {
  const PlanSpec& p = in.p;
  const auto k = static_cast<size_t>(s.k);
  DpTraffic t = dp_traffic(in.prof, p, grad_ranks(p), in.comm.dp_by_stage[k], sp.params - sp.expert_params,
                           in.layer_params, sp.non_layer, in.grad_elem, in.pb.weights);
  if (sp.expert_params > 0) {
    // The routed experts' gradients reduce (and ZeRO shards them) over the expert data-
    // parallel ranks, beside the dense parameters' traffic over dp x cp.
    const auto& edp_groups = in.comm.edp_by_stage.empty() ? in.comm.dp_by_stage[k] : in.comm.edp_by_stage[k];
    const DpTraffic te = dp_traffic(in.prof, p, expert_grad_ranks(p), edp_groups, sp.expert_params,
                                    sp.expert_params / static_cast<double>(s.layers), 0, in.grad_elem,
                                    in.pb.weights);
    t.reduce_s += te.reduce_s;
    t.gather_s += te.gather_s;
    t.mb_reduce_s += te.mb_reduce_s;
    t.layer_gather_s += te.layer_gather_s;
    t.layer_reduce_s += te.layer_reduce_s;
  }
  return t;
}

// DP per micro-batch: ZeRO-2's reduce-scatters under each backward (bucketed); ZeRO-3 / FSDP's
// gathers and reduce-scatters of every layer. With prefetch each layer's gather runs under the
// previous layer's forward; in backward the next gather and this layer's reduce-scatter run under
// its backward, and the last layer of the forward is not gathered again. The first gather of each
// pass and the last reduce-scatter have nothing to run under.
void dp_micro_batch_term(const PlanCostInputs& in, const StageLayers& s, const DpTraffic& t, double buckets,
                         StageTime& st) {
  const PlanSpec& p = in.p;
  const StackOverlap& ov = in.j.overlap;
  const double bwd = st.backward_s + st.recompute_s;
  st.dp_backward_s = ov.grad_reduce ? overlapped_time_s(t.mb_reduce_s, bwd, t.mb_reduce_s / buckets, in.slowdown)
                                    : t.mb_reduce_s;
  if (p.zero < 3 || grad_ranks(p) <= 1 || s.layers <= 0) return;
  const double n_layers = static_cast<double>(s.layers);
  const bool first = s.k == 0, last = s.k == p.pp - 1;
  const double fwd_layer = (st.forward_s - (first ? in.emb.forward : 0) - (last ? in.head.forward : 0)) / n_layers;
  const double bwd_layer = (bwd - (first ? in.emb.backward : 0) - (last ? in.head.backward : 0)) / n_layers;
  const double ag = t.layer_gather_s, rs = t.layer_reduce_s;
  if (ov.sharded_prefetch) {
    st.dp_forward_s = t.root_gather_s + ag + (n_layers - 1) * overlapped_time_s(ag, fwd_layer, 0, in.slowdown);
    st.dp_backward_s = (n_layers - 1) * overlapped_time_s(ag + rs, bwd_layer, 0, in.slowdown) + rs +
                       t.root_reduce_s;
  } else {
    st.dp_forward_s = t.root_gather_s + n_layers * ag;
    st.dp_backward_s = (n_layers - 1) * ag + n_layers * rs + t.root_reduce_s;
  }
}

// DP once per iteration: the reduction under the last micro-batch's backward and the distributed
// optimizer's gather under the next forward, each exposing at least a bucket.
double dp_iteration_exposed_s(const PlanCostInputs& in, const DpTraffic& t, double buckets, const StageTime& st) {
  const StackOverlap& ov = in.j.overlap;
  const double exposed_dp = 1 - in.prof.dp_overlap;
  const double bwd = st.backward_s + st.recompute_s;
  return (ov.grad_reduce ? overlapped_time_s(t.reduce_s, bwd, t.reduce_s / buckets, in.slowdown)
                         : exposed_dp * t.reduce_s) +
         (ov.param_gather ? overlapped_time_s(t.gather_s, st.forward_s, t.gather_s / buckets, in.slowdown)
                          : exposed_dp * t.gather_s);
}

// The optimizer step: the distributed optimizer steps its shard (the dense parameters' over
// dp x cp, the experts' over the expert data-parallel ranks), and casts the weights to fp8 once
// per iteration (Transformer Engine).
double optimizer_term(const PlanCostInputs& in, const StageParams& sp) {
  const PlanSpec& p = in.p;
  const double weight_cast_bytes =
      in.ops.shard.fp8 && !in.j.fp8.weight_cast_per_micro_batch
          ? (sp.params - sp.non_layer) * fp8_cast_bytes_per_element(in.j.fp8, in.pb.weights)
          : 0;
  const double dp = static_cast<double>(grad_ranks(p));  // weights replicated over dp x cp
  const double edp = static_cast<double>(expert_grad_ranks(p));
  const double stepped = p.zero >= 1 ? (sp.params - sp.expert_params) / dp + sp.expert_params / edp : sp.params;
  return (stepped * kOptimizerBytesPerParam + weight_cast_bytes) / in.opt_rate;
}

// Pipeline p2p: each TP rank sends its 1/t slice (Megatron-LM scatter/gather, or SP shards);
// without SP the receiver all-gathers the slices over NVLink. Interleaved with the stack's p2p
// overlap, a transfer runs under the next chunk's compute (the shortest forward chunk).
void p2p_term(const PlanCostInputs& in, IterationCosts& out) {
  const PlanSpec& p = in.p;
  if (p.pp > 1) {
    const double bytes = shard_tokens(in.m, in.ops.shard) * static_cast<double>(in.m.hidden) * in.ops.shard.act_bytes;
    out.p2p_s = max_p2p_s(in.prof, in.comm.p2p, bytes / static_cast<double>(p.tp));
    if (!p.sequence_parallel && p.tp > 1) {
      double gather = 0;
      for (const auto& tp_groups : in.comm.tp_by_stage)
        gather = std::max(gather, max_coll_s(in.prof, tp_groups, Collective::all_gather, bytes));
      out.p2p_s += gather;
    }
  }
  out.p2p_exposed_fraction = 1 - in.prof.pp_overlap;
  out.p2p_per_micro_batch = in.j.pipeline.sequential_p2p && p.pp >= 3 ? 4 : 2;
  if (in.j.overlap.p2p && p.vpp > 1 && out.p2p_s > 0) {
    double chunk = out.stages.front().forward_s;
    for (const StageTime& st : out.stages) chunk = std::min(chunk, st.forward_s);
    chunk /= static_cast<double>(p.vpp);
    out.p2p_exposed_fraction = overlapped_time_s(out.p2p_s, chunk, 0, 0) / out.p2p_s;
  }
}

// The tied embedding's gradient all-reduce between the first and the last stage.
void embedding_sync_term(const PlanCostInputs& in, IterationCosts& out) {
  const PlanSpec& p = in.p;
  if (p.pp <= 1 || !in.m.tied_embeddings) return;
  const double emb_bytes = static_cast<double>(in.ops.shard.padded_vocab) / static_cast<double>(p.tp) *
                           static_cast<double>(in.m.hidden) * in.grad_elem;
  out.embedding_sync_s = max_coll_s(in.prof, in.comm.embedding, Collective::all_reduce, emb_bytes);
  const double exposed_dp = 1 - in.prof.dp_overlap;
  out.dp_exposed_s.front() += exposed_dp * out.embedding_sync_s;
  out.dp_exposed_s.back() += exposed_dp * out.embedding_sync_s;
}

}  // namespace

IterationCosts iteration_costs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                               const PlanSpec& plan, const EfficiencyProfile& prof,
                               const PlanOps& built) {
  const ShardOps& ops = *built.ops;
  PlanSpec p = plan;
  p.zero = zero_stage_run(j, plan);  // the sharding the stack runs (TorchTitan's FSDP with pp)
  const ClusterSpec& c = topo.spec();
  IterationCosts out;
  Rates rates = rates_for(c.gpu, j, prof);
  rates.cache_fraction = cache_resident_fraction(m, j, p, prof);
  rates.layer = layer_key(m, p.tp);
  out.cache_fraction = rates.cache_fraction;
  out.peak_flops_per_s = c.gpu.peak(j.dtype);
  const StackOverlap& ov = j.overlap;
  const bool tp_overlapped = ov.tp_comm && p.sequence_parallel && p.tp > 1;
  const PlanCostInputs in{
      .m = m, .j = j, .p = p, .prof = prof, .ops = ops, .comm = topo.plan_comm(p),
      .lt_rec = phase_times(ops.layer_rec, rates), .lt_plain = phase_times(ops.layer_plain, rates),
      .emb = phase_times(ops.embedding, rates), .head = phase_times(ops.head, rates),
      .moe = m.is_moe() ? moe_layers(ops, rates) : MoeLayers{},
      .attention = p.cp > 1 ? attention_times(ops.layer_plain, rates) : PhaseTimes{},
      .slowdown = overlap_slowdown(c.gpu, ov), .tp_overlapped = tp_overlapped,
      .gemm_rec = tp_overlapped ? linear_gemm_time(ops.layer_rec, rates) : 0,
      .gemm_plain = tp_overlapped ? linear_gemm_time(ops.layer_plain, rates) : 0,
      .pb = param_bytes(j.bytes_per_param),
      .grad_elem = j.bytes_per_param == ParamBytesConvention::b16 ? 2.0 : 4.0,
      .layer_params = layer_params_per_rank(m, p.tp), .opt_rate = optimizer_rate(rates, prof)};
  const auto stages = static_cast<size_t>(p.pp);
  out.stages.reserve(stages);
  out.dp_s.reserve(stages);
  out.dp_exposed_s.reserve(stages);
  out.optimizer_s.reserve(stages);
  for (int64_t k = 0; k < p.pp; ++k) {
    const StageLayers s = layers_of_stage(in, k);
    StageTime st;
    compute_term(in, s, st);
    const StageTp tp = tp_traffic(in, s);
    ep_term(in, s, st, out);
    cp_term(in, s, st);
    tp_term(in, s, tp, st);
    host_term(in, s, tp, st);
    const StageParams sp{stage_params_per_rank(m, p, k), stage_expert_params_per_rank(m, p, k),
                         stage_non_layer_params_per_rank(m, p, k)};
    const DpTraffic t = stage_dp_traffic(in, s, sp);
    const double buckets = static_cast<double>(dp_bucket_count(sp.params, grad_ranks(p)));
    dp_micro_batch_term(in, s, t, buckets, st);
    out.stages.push_back(st);
    out.dp_s.push_back(t.reduce_s + t.gather_s);
    out.dp_exposed_s.push_back(dp_iteration_exposed_s(in, t, buckets, st));
    out.optimizer_s.push_back(optimizer_term(in, sp));
  }
  p2p_term(in, out);
  embedding_sync_term(in, out);
  return out;
}

}  // namespace parallax
