#include "parallax/simulator/sim_inputs.hpp"

#include <algorithm>
#include <cmath>

#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/topologies/topology.hpp"

namespace parallax {
namespace {

// One chunk's step times: the stage's terms (kStageTerms) summed per pass and stream, over the
// chunks. A term of both passes at once (the exposed TP time: its collectives sit between the
// GEMMs of both) splits as the compute does.
void set_step_times(const StageTime& st, double vpp, RankCosts& rc) {
  double forward = 0;  // the compute's forward part
  for (const StageTermInfo& term : kStageTerms)
    if (term.part == &TimeBreakdown::compute_s) forward += pass_s(st, term, Pass::forward);
  const double both = stage_parts(st).compute_s;
  const double forward_share = both > 0 ? forward / both : 0.5;
  double s[kPasses][kStepStreams] = {};
  for (const StageTermInfo& term : kStageTerms) {
    const auto stream = static_cast<size_t>(term.stream);
    if (term.split_as_compute) {
      s[0][stream] += st.*term.forward * forward_share;
      s[1][stream] += st.*term.forward * (1 - forward_share);
      continue;
    }
    if (term.forward != nullptr) s[0][stream] += st.*term.forward;
    if (term.backward != nullptr) s[1][stream] += st.*term.backward;
  }
  for (const Pass pass : {Pass::forward, Pass::backward}) {
    for (size_t stream = 0; stream < kStepStreams; ++stream) {
      rc.step[static_cast<size_t>(pass)][stream].s = s[static_cast<size_t>(pass)][stream] / vpp;
    }
  }
}

}  // namespace

SimInputs make_sim_inputs(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                          const PlanSpec& p, const EfficiencyProfile& prof) {
  return make_sim_inputs(m, Topology(c), j, p, prof);
}

SimInputs make_sim_inputs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                          const PlanSpec& p, const EfficiencyProfile& prof) {
  return make_sim_inputs(m, j, p, iteration_costs(m, topo, j, p, prof), stage_memory(m, j, p));
}

SimInputs make_sim_inputs(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                          const IterationCosts& costs, const std::vector<StageMemory>& mem) {
  SimInputs in;
  in.table = make_schedule(p.schedule, p.pp, p.vpp, p.num_micro_batches, p.microbatch_group);
  const double vpp = static_cast<double>(p.vpp);
  const double grad_elem = j.bytes_per_param == ParamBytesConvention::b16 ? 2 : 4;

  in.p2p_s = costs.p2p_s;
  in.p2p_exposed_fraction = costs.p2p_exposed_fraction;
  in.p2p_receive_blocks = j.pipeline.sequential_p2p;
  const ShardShape sh = shard_shape(m, j, p);
  in.p2p_bytes = shard_tokens(m, sh) * static_cast<double>(m.hidden) * sh.act_bytes /
                 static_cast<double>(p.tp);
  // Ring sends per layer: cp - 1 steps of K and V (forward), of K, V, dK and dV (backward).
  const double kv_step_bytes = 2 * shard_tokens(m, sh) * static_cast<double>(m.kv_head_count()) /
                               static_cast<double>(p.tp) * static_cast<double>(m.head_dim()) *
                               sh.act_bytes;
  const double ring_steps = static_cast<double>(p.cp - 1);
  for (int64_t k = 0; k < p.pp; ++k) {
    const size_t i = static_cast<size_t>(k);
    const StageTime& st = costs.stages[i];
    RankCosts rc;
    const double chunk_layers = static_cast<double>(stage_layers(m.layers, p, k)) / vpp;
    const double reruns = p.recompute == Recompute::full ? 1 : 0;
    set_step_times(st, vpp, rc);
    rc.at(Pass::forward, StepStream::cp).bytes = chunk_layers * ring_steps * kv_step_bytes;
    rc.at(Pass::backward, StepStream::cp).bytes = chunk_layers * ring_steps * (2 + reruns) * kv_step_bytes;
    if (m.is_moe() && p.ep > 1) {
      // Dispatch and combine per MoE layer of the chunk (backward: their gradients, and the
      // recomputed forward's), each the bytes one dispatch moves per rank (iteration_costs: the
      // nccl-tests size with alltoall, what a rank sends with a deduplicating dispatcher).
      const double moe_layers = static_cast<double>(stage_moe_layers(m, p, k)) / vpp;
      const double a2a = costs.ep_all_to_all_bytes;
      rc.at(Pass::forward, StepStream::ep).bytes = moe_layers * 2 * a2a;
      rc.at(Pass::backward, StepStream::ep).bytes = moe_layers * 2 * (1 + reruns) * a2a;
    }
    rc.dp_s = costs.dp_s[i];
    rc.dp_buckets = dp_bucket_count(mem[i].params, grad_ranks(p));
    rc.dp_bytes = grad_ranks(p) > 1 ? mem[i].params * grad_elem : 0;
    if (k == 0 || k == p.pp - 1) rc.embedding_sync_s = costs.embedding_sync_s;
    rc.dp_hidden_s = std::max(0.0, rc.dp_s + rc.embedding_sync_s - costs.dp_exposed_s[i]);
    rc.optimizer_s = costs.optimizer_s[i];
    rc.chunk_activation_bytes = stage_activation_bytes_per_micro_batch(m, j, p, k) / vpp;
    rc.static_bytes = mem[i].total_bytes() - mem[i].activations_bytes;
    in.ranks.push_back(rc);
  }
  return in;
}

}  // namespace parallax
