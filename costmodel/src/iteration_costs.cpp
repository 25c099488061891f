#include "parallax/costmodel/iteration_costs.hpp"

#include <algorithm>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/costmodel/comm.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax {
namespace {

// Adam step per parameter: fp32 master, m and v read and written (24), fp32 grad read (4),
// 16-bit weight written (2), gradient-norm read (4) and gradient zeroing (4).
constexpr double kOptimizerBytesPerParam = 38;

struct Rates {
  double peak_flops_per_s;
  double mem_bytes_per_s;
  double scale;
  const EfficiencyProfile* prof;
};

double op_time(const Op& op, const Rates& r) {
  const double mem_s = op.bytes / (r.mem_bytes_per_s * r.prof->memory_bound_efficiency * r.scale);
  if (op.kind == OpKind::memory) return mem_s;
  const double eff = r.prof->gemm_efficiency(op.shape.min_dim());
  return std::max(op.flops / (r.peak_flops_per_s * eff * r.scale), mem_s);
}

struct PhaseTimes {
  double forward = 0;
  double backward = 0;
  double recompute = 0;
};

PhaseTimes phase_times(const std::vector<Op>& ops, const Rates& r) {
  PhaseTimes t;
  for (const Op& op : ops) {
    const double s = op_time(op, r);
    switch (op.phase) {
      case Phase::forward: t.forward += s; break;
      case Phase::backward_data:
      case Phase::backward_weight: t.backward += s; break;
      case Phase::recompute: t.recompute += s; break;
    }
  }
  return t;
}

double comm_time(const std::vector<CommOp>& ops, const ClusterSpec& c, const GroupSpan& tp) {
  double t = 0;
  for (const CommOp& op : ops) {
    switch (op.kind) {
      case CommKind::tp_all_reduce: t += collective_time_s(c, Collective::all_reduce, tp, op.bytes); break;
      case CommKind::tp_reduce_scatter:
        t += collective_time_s(c, Collective::reduce_scatter, tp, op.bytes);
        break;
      case CommKind::tp_all_gather: t += collective_time_s(c, Collective::all_gather, tp, op.bytes); break;
      case CommKind::none: break;
    }
  }
  return t;
}

// Data-parallel gradient synchronisation of one stage's parameters, per iteration.
double dp_time(const ClusterSpec& c, const PlanSpec& p, const GroupSpan& dp, double params,
               double grad_elem_bytes, double weight_elem_bytes) {
  if (p.dp <= 1) return 0;
  const double grads = params * grad_elem_bytes;
  const double weights = params * weight_elem_bytes;
  switch (p.zero) {
    case 0: return collective_time_s(c, Collective::all_reduce, dp, grads);
    case 1:
    case 2:
      return collective_time_s(c, Collective::reduce_scatter, dp, grads) +
             collective_time_s(c, Collective::all_gather, dp, weights);
    default: {
      // ZeRO-3 gathers the weights for every forward and backward of every micro-batch and
      // reduce-scatters the gradients of each micro-batch.
      const double m = static_cast<double>(p.num_micro_batches);
      return m * (2 * collective_time_s(c, Collective::all_gather, dp, weights) +
                  collective_time_s(c, Collective::reduce_scatter, dp, grads));
    }
  }
}

}  // namespace

IterationCosts iteration_costs(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                               const PlanSpec& p, const EfficiencyProfile& prof) {
  IterationCosts out;
  out.peak_flops_per_s = c.gpu.peak(j.dtype);
  if (out.peak_flops_per_s <= 0) {
    throw InputError("job", "$.job.dtype",
                     std::string("GPU ") + c.gpu.name + " has no " + to_string(j.dtype) + " math");
  }
  const Rates rates{out.peak_flops_per_s, c.gpu.hbm_bandwidth_bytes_per_s,
                    prof.framework(j.framework).compute_efficiency_scale, &prof};
  const ShardShape sh = shard_shape(m, j, p);
  const PlanSpans spans = plan_spans(p, c.gpus_per_node);
  const int64_t layers = m.layers / p.pp;
  const int64_t recomputed =
      p.recompute == Recompute::full && p.recompute_layers > 0 ? p.recompute_layers : layers;

  const PhaseTimes lt_rec = phase_times(layer_ops(m, sh, p.recompute), rates);
  const PhaseTimes lt_plain = phase_times(layer_ops(m, sh, Recompute::none), rates);
  const double tp_rec = comm_time(layer_comm(m, sh, p.recompute), c, spans.tp);
  const double tp_plain = comm_time(layer_comm(m, sh, Recompute::none), c, spans.tp);
  const PhaseTimes emb = phase_times(embedding_ops(m, sh), rates);
  const PhaseTimes head = phase_times(head_ops(m, sh), rates);
  const double tp_emb = comm_time(embedding_comm(m, sh), c, spans.tp);
  const double tp_head = comm_time(head_comm(m, sh), c, spans.tp);

  const double n_rec = static_cast<double>(p.recompute == Recompute::full ? recomputed : layers);
  const double n_plain = static_cast<double>(layers) - n_rec;
  const double exposed_tp = 1 - prof.tp_overlap;
  for (int64_t k = 0; k < p.pp; ++k) {
    StageTime st;
    st.forward_s = n_rec * lt_rec.forward + n_plain * lt_plain.forward;
    st.backward_s = n_rec * lt_rec.backward + n_plain * lt_plain.backward;
    st.recompute_s = n_rec * lt_rec.recompute;
    double tp = n_rec * tp_rec + n_plain * tp_plain;
    if (k == 0) {
      st.forward_s += emb.forward;
      st.backward_s += emb.backward;
      tp += tp_emb;
    }
    if (k == p.pp - 1) {
      st.forward_s += head.forward;
      st.backward_s += head.backward;
      tp += tp_head;
    }
    st.tp_comm_s = exposed_tp * tp;
    out.stages.push_back(st);
  }

  // Pipeline p2p: each TP rank sends its 1/t slice (Megatron-LM scatter/gather, or SP shards);
  // without SP the receiver all-gathers the slices over NVLink.
  if (p.pp > 1) {
    const double bytes = static_cast<double>(p.micro_batch * m.seq_len * m.hidden) * sh.act_bytes;
    out.p2p_s = p2p_time_s(c, spans.pp_crosses_nodes, bytes / static_cast<double>(p.tp));
    if (!p.sequence_parallel && p.tp > 1) {
      out.p2p_s += collective_time_s(c, Collective::all_gather, spans.tp, bytes);
    }
  }
  out.p2p_exposed_fraction = 1 - prof.pp_overlap;

  const ParamBytes pb = param_bytes(j.bytes_per_param);
  const double grad_elem = j.bytes_per_param == ParamBytesConvention::b16 ? 2 : 4;
  const double dp = static_cast<double>(p.dp);
  const double mem_rate =
      rates.mem_bytes_per_s * prof.memory_bound_efficiency * rates.scale;
  for (int64_t k = 0; k < p.pp; ++k) {
    const double params = stage_params_per_rank(m, p, k);
    out.dp_s.push_back(dp_time(c, p, spans.dp, params, grad_elem, pb.weights));
    out.optimizer_s.push_back(params / (p.zero >= 1 ? dp : 1) * kOptimizerBytesPerParam / mem_rate);
  }
  out.dp_exposed_fraction = 1 - prof.dp_overlap;
  if (p.pp > 1 && m.tied_embeddings) {
    const double emb_bytes = static_cast<double>(sh.padded_vocab) / static_cast<double>(p.tp) *
                             static_cast<double>(m.hidden) * grad_elem;
    out.embedding_sync_s = collective_time_s(
        c, Collective::all_reduce, GroupSpan{2, spans.pp_crosses_nodes ? 2 : 1, 1}, emb_bytes);
  }
  return out;
}

}  // namespace parallax
