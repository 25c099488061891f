// Analytic iteration time (DESIGN.md §4): per-stage op times from the efficiency profile, TP
// collectives on the critical path, 1F1B / interleaved pipeline with its bubble, exposed data-
// parallel gradient reduction and the optimizer step.
#include "parallax/costmodel/predict.hpp"

#include <algorithm>
#include <numeric>

#include "parallax/core/error.hpp"
#include "parallax/costmodel/comm.hpp"
#include "parallax/costmodel/conventions.hpp"
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

Prediction predict(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof) {
  Prediction out;
  const double peak = c.gpu.peak(j.dtype);
  if (peak <= 0) {
    throw InputError("job", "$.job.dtype",
                     std::string("GPU ") + c.gpu.name + " has no " + to_string(j.dtype) + " math");
  }
  const Rates rates{peak, c.gpu.hbm_bandwidth_bytes_per_s,
                    prof.framework(j.framework).compute_efficiency_scale, &prof};
  const ShardShape sh = shard_shape(m, j, p);
  const PlanSpans spans = plan_spans(p, c.gpus_per_node);
  const int64_t layers = m.layers / p.pp;
  const int64_t recomputed =
      p.recompute == Recompute::full && p.recompute_layers > 0 ? p.recompute_layers : layers;

  const std::vector<Op> layer_rec = layer_ops(m, sh, p.recompute);
  const std::vector<Op> layer_plain = layer_ops(m, sh, Recompute::none);
  const PhaseTimes lt_rec = phase_times(layer_rec, rates);
  const PhaseTimes lt_plain = phase_times(layer_plain, rates);
  const double tp_rec = comm_time(layer_comm(m, sh, p.recompute), c, spans.tp);
  const double tp_plain = comm_time(layer_comm(m, sh, Recompute::none), c, spans.tp);
  const PhaseTimes emb = phase_times(embedding_ops(m, sh), rates);
  const PhaseTimes head = phase_times(head_ops(m, sh), rates);
  const double tp_emb = comm_time(embedding_comm(m, sh), c, spans.tp);
  const double tp_head = comm_time(head_comm(m, sh), c, spans.tp);

  const double n_rec = static_cast<double>(p.recompute == Recompute::full ? recomputed : layers);
  const double n_plain = static_cast<double>(layers) - n_rec;
  const double exposed_tp = 1 - prof.tp_overlap;

  std::vector<double> stage_s;  // one micro-batch on each stage, exposed TP included
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
    out.stage_times.push_back(st);
    stage_s.push_back(st.forward_s + st.backward_s + st.recompute_s + st.tp_comm_s);
  }

  // Pipeline p2p: each TP rank sends its 1/t slice (Megatron-LM scatter/gather, or SP shards);
  // without SP the receiver all-gathers the slices over NVLink.
  double p2p = 0;
  if (p.pp > 1) {
    const double bytes = static_cast<double>(p.micro_batch * m.seq_len * m.hidden) * sh.act_bytes;
    p2p = p2p_time_s(c, spans.pp_crosses_nodes, bytes / static_cast<double>(p.tp));
    if (!p.sequence_parallel && p.tp > 1) {
      p2p += collective_time_s(c, Collective::all_gather, spans.tp, bytes);
    }
  }
  const double vpp = static_cast<double>(p.vpp);
  const double pp_per_mb = (1 - prof.pp_overlap) * 2 * vpp * p2p;
  const double mb = static_cast<double>(p.num_micro_batches);
  const auto crit = std::max_element(stage_s.begin(), stage_s.end());
  const int64_t k_crit = crit - stage_s.begin();
  const double mean_s = std::accumulate(stage_s.begin(), stage_s.end(), 0.0) /
                        static_cast<double>(p.pp);
  const StageTime& sc = out.stage_times[static_cast<size_t>(k_crit)];

  out.time.compute_s = mb * (sc.forward_s + sc.backward_s + sc.recompute_s);
  out.time.tp_comm_s = mb * sc.tp_comm_s;
  out.time.pp_comm_s = mb * pp_per_mb + 2 * static_cast<double>(p.pp - 1) * p2p;
  out.time.bubble_s = static_cast<double>(p.pp - 1) / vpp * mean_s;

  // Gradient synchronisation after the last backward, slowest stage; the tied embedding's
  // all-reduce between first and last stage follows it.
  out.memory = stage_memory(m, j, p);
  const ParamBytes pb = param_bytes(j.bytes_per_param);
  const double grad_elem = j.bytes_per_param == ParamBytesConvention::b16 ? 2 : 4;
  double dp_s = 0;
  double opt_s = 0;
  const double dp = static_cast<double>(p.dp);
  for (const StageMemory& sm : out.memory) {
    dp_s = std::max(dp_s, dp_time(c, p, spans.dp, sm.params, grad_elem, pb.weights));
    const double opt_params = sm.params / (p.zero >= 1 ? dp : 1);
    opt_s = std::max(opt_s, opt_params * kOptimizerBytesPerParam /
                                (rates.mem_bytes_per_s * prof.memory_bound_efficiency * rates.scale));
  }
  if (p.pp > 1 && m.tied_embeddings) {
    const double emb_bytes = static_cast<double>(sh.padded_vocab) / static_cast<double>(p.tp) *
                             static_cast<double>(m.hidden) * grad_elem;
    dp_s += collective_time_s(c, Collective::all_reduce, GroupSpan{2, spans.pp_crosses_nodes ? 2 : 1, 1},
                              emb_bytes);
  }
  out.time.dp_comm_exposed_s = (1 - prof.dp_overlap) * dp_s;
  out.time.optimizer_s = opt_s;

  out.iteration_time_s = out.time.compute_s + out.time.tp_comm_s + out.time.pp_comm_s +
                         out.time.bubble_s + out.time.dp_comm_exposed_s + out.time.optimizer_s;

  // FLOPs: counted GEMMs of every rank and micro-batch.
  const double ranks_x_mb = static_cast<double>(p.tp) * mb * dp;
  const double L = static_cast<double>(m.layers);
  const double head_flops = total_flops(head_ops(m, sh), false);
  out.model_flops = ranks_x_mb * (L * total_flops(layer_plain, false) + head_flops);
  const double rec_layers = static_cast<double>(p.pp) * n_rec;
  out.hardware_flops =
      out.model_flops + ranks_x_mb * rec_layers * (total_flops(layer_rec, true) -
                                                   total_flops(layer_rec, false));
  const int64_t global_batch = p.micro_batch * p.num_micro_batches * p.dp;
  out.megatron_flops = megatron_flops_closed_form(m, global_batch);
  const double gpus = static_cast<double>(p.gpus());
  const double denom = gpus * out.iteration_time_s * 1e12;
  out.model_tflops_per_gpu = out.model_flops / denom;
  out.hardware_tflops_per_gpu = out.hardware_flops / denom;
  out.megatron_tflops_per_gpu = out.megatron_flops / denom;
  out.mfu = out.model_flops / (gpus * out.iteration_time_s * peak);
  out.tokens_per_s = static_cast<double>(global_batch * m.seq_len) / out.iteration_time_s;

  // Memory: most loaded stage against the GPU, with the profile's reserve.
  for (const StageMemory& sm : out.memory) {
    if (sm.total_bytes() > out.peak_bytes) {
      out.peak_bytes = sm.total_bytes();
      out.peak_stage = sm.stage;
    }
  }
  out.reserve_bytes = prof.memory_reserve_bytes;
  out.capacity_bytes = c.gpu.hbm_bytes;
  out.fits = out.peak_bytes + out.reserve_bytes <= out.capacity_bytes;
  out.bytes_per_param = bytes_per_param(j.bytes_per_param);
  return out;
}

}  // namespace parallax
