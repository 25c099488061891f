#pragma once
// Analytic prediction of one training iteration: time breakdown, memory per stage, throughput in
// every FLOP convention. The simulator refines the pipeline part; the planner calls this for every
// candidate, so it must stay cheap.
#include <cstdint>
#include <utility>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/plan_ops.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/costmodel/time_breakdown.hpp"

namespace parallax {

// The parts for a chart, short names in timeline order; the context-parallel, expert-parallel and
// host-wait parts only where the plan has them.
std::vector<std::pair<const char*, double>> chart_time_parts(const TimeBreakdown& t);

struct Prediction {
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double model_flops = 0;      // per iteration, counted ops, no recompute
  double hardware_flops = 0;   // per iteration, counted ops, with recompute
  double megatron_flops = 0;   // 96 B s L h^2 (...) convention
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double megatron_tflops_per_gpu = 0;
  double mfu = 0;  // model FLOPs / (gpus * time * dense peak of the dtype)
  TimeBreakdown time;
  // Mixture of experts with ep > 1: one dispatch all-to-all (one MoE layer, one micro-batch) on
  // the slowest expert-parallel group, and its per-rank size (IterationCosts).
  double ep_all_to_all_s = 0;
  double ep_all_to_all_bytes = 0;
  std::vector<StageTime> stage_times;
  std::vector<StageMemory> memory;
  double peak_bytes = 0;  // most loaded stage, without the reserve
  int64_t peak_stage = 0;
  double reserve_bytes = 0;
  double capacity_bytes = 0;
  bool fits = false;
  int bytes_per_param = 18;
  // The ZeRO stage the stack runs the plan with (zero_stage_run): the plan's, or 1 where the
  // stack gathers a stage's parameters once per step (TorchTitan's FSDP with pp).
  int64_t zero_run = 0;
  // The costs the times above were arranged from (iteration_costs): kept so that the simulator
  // plays the same plan from them instead of computing them again (make_sim_inputs).
  IterationCosts costs;
};

// Inputs must already satisfy validate_plan. num_micro_batches must be set.
// Builds the cluster graph (milliseconds for a 4,480-GPU cluster); a caller predicting many plans
// on one cluster (the planner) should build a Topology once and use the overload below, whose
// plan analyses are memoised.
Prediction predict(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof);
Prediction predict(const ModelSpec& m, const Topology& topo, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof);
// The same with the plan's op lists built once: `ops` must be plan_ops(m, j, p, the cluster's
// GPU). A caller pricing one plan under many profiles (parallax fit) saves rebuilding them.
Prediction predict(const ModelSpec& m, const Topology& topo, const JobSpec& j, const PlanSpec& p,
                   const EfficiencyProfile& prof, const PlanOps& ops);

// The memory half of a prediction, from the plan's stage memory (stage_memory(m, j, p)): memory,
// peak_bytes, peak_stage, reserve_bytes, capacity_bytes, fits, bytes_per_param and zero_run, as
// predict() sets them; nothing of the time. A plan that does not fit is rejected whatever its
// time, so the planner asks this first and prices only the plans that fit.
Prediction predict_memory(const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                          const EfficiencyProfile& prof, std::vector<StageMemory> memory);

}  // namespace parallax
