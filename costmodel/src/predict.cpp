// Analytic iteration time (docs/design.md §4): the iteration's costs arranged as a 1F1B / interleaved
// pipeline — m steady micro-batches on the slowest stage, the bubble (pp-1)/vpp stage-times, p2p
// on the critical path — then the exposed data-parallel synchronisation and the optimizer step.
#include "parallax/costmodel/predict.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/plan_ops.hpp"
#include "parallax/costmodel/stage_time.hpp"

namespace parallax {

std::vector<std::pair<const char*, double>> chart_time_parts(const TimeBreakdown& t) {
  std::vector<std::pair<const char*, double>> parts;
  for (const TimePartInfo& part : kTimeParts) {
    const double s = t.*part.seconds;
    if (!part.some_plans_only || s > 0) parts.push_back({part.name, s});
  }
  return parts;
}

Prediction predict(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof) {
  const Topology topo(c);
  return predict(m, topo, j, p, prof);
}

Prediction predict(const ModelSpec& m, const Topology& topo, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof) {
  return predict(m, topo, j, p, prof, plan_ops(m, j, p, topo.spec().gpu));
}

Prediction predict(const ModelSpec& m, const Topology& topo, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof, const PlanOps& built) {
  Prediction out = predict_memory(topo.spec(), j, p, prof, built.memory);
  out.costs = iteration_costs(m, topo, j, p, prof, built);
  const IterationCosts& costs = out.costs;
  const ShardOps& ops = *built.ops;
  out.stage_times = costs.stages;

  const double vpp = static_cast<double>(p.vpp);
  const double mb = static_cast<double>(p.num_micro_batches);
  const double pp_per_mb = costs.p2p_exposed_fraction * costs.p2p_per_micro_batch * vpp * costs.p2p_s;
  std::vector<double> stage_s;
  for (const StageTime& st : costs.stages) stage_s.push_back(st.total_s());
  const auto crit = std::max_element(stage_s.begin(), stage_s.end());
  const StageTime& sc = costs.stages[static_cast<size_t>(crit - stage_s.begin())];
  const double mean_s =
      std::accumulate(stage_s.begin(), stage_s.end(), 0.0) / static_cast<double>(p.pp);

  // The critical stage's terms, every micro-batch of them (kStageTerms).
  const TimeBreakdown per_micro_batch = stage_parts(sc);
  for (const TimePartInfo& part : kTimeParts) out.time.*part.seconds = mb * per_micro_batch.*part.seconds;
  out.ep_all_to_all_s = costs.ep_all_to_all_s;
  out.ep_all_to_all_bytes = costs.ep_all_to_all_bytes;
  out.time.pp_comm_s = mb * pp_per_mb + 2 * static_cast<double>(p.pp - 1) * costs.p2p_s;
  out.time.bubble_s = static_cast<double>(p.pp - 1) / vpp * mean_s;
  // The exposed data-parallel traffic: ZeRO-2/3's per micro-batch on the critical stage, and the
  // once-per-iteration synchronisation of the stage that exposes most (with the tied embedding's
  // all-reduce between first and last stage).
  out.time.dp_comm_exposed_s += *std::max_element(costs.dp_exposed_s.begin(), costs.dp_exposed_s.end());
  out.time.optimizer_s = *std::max_element(costs.optimizer_s.begin(), costs.optimizer_s.end());
  out.iteration_time_s = out.time.total_s();

  // FLOPs: counted GEMMs of every rank and micro-batch. The MoE layers' at uniform routing: an
  // imbalance slows the busiest rank, it does not add work.
  // (ShardOps counts them at moe_imbalance 1.)
  const auto moe_layers = static_cast<double>(m.moe_layers());
  const double ranks_x_mb =
      static_cast<double>(p.tp) * static_cast<double>(p.cp) * mb * static_cast<double>(p.dp);
  out.model_flops = ranks_x_mb * ((static_cast<double>(m.layers) - moe_layers) * ops.layer_plain_flops +
                                  moe_layers * ops.moe_plain_flops + ops.head_flops);
  int64_t rec_total = 0;
  for (int64_t k = 0; k < p.pp; ++k) {
    rec_total += p.recompute == Recompute::full && p.recompute_layers > 0
                     ? p.recompute_layers
                     : stage_layers(m.layers, p, k);
  }
  const double rec_layers = static_cast<double>(rec_total);
  out.hardware_flops = out.model_flops + ranks_x_mb * rec_layers * (ops.layer_rec_flops_with -
                                                                    ops.layer_rec_flops_without);
  const int64_t global_batch = p.micro_batch * p.num_micro_batches * p.dp;
  // Megatron's closed form is a dense GPT's with heads hidden / heads wide: an MoE model, or
  // one of decoupled head_dim, reports its counted model FLOPs.
  const bool counted = m.is_moe() || m.decoupled_head_dim();
  out.megatron_flops = counted ? out.model_flops : megatron_flops_closed_form(m, global_batch);
  const double gpus = static_cast<double>(p.gpus());
  const double denom = gpus * out.iteration_time_s * 1e12;
  out.model_tflops_per_gpu = out.model_flops / denom;
  out.hardware_tflops_per_gpu = out.hardware_flops / denom;
  out.megatron_tflops_per_gpu = out.megatron_flops / denom;
  out.mfu = out.model_flops / (gpus * out.iteration_time_s * costs.peak_flops_per_s);
  out.tokens_per_s = static_cast<double>(global_batch * m.seq_len) / out.iteration_time_s;
  return out;
}

Prediction predict_memory(const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                          const EfficiencyProfile& prof, std::vector<StageMemory> memory) {
  Prediction out;
  // Memory: most loaded stage against the GPU, with the profile's reserve.
  out.memory = std::move(memory);
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
  out.zero_run = zero_stage_run(j, p);
  return out;
}

}  // namespace parallax
