#include "what_if_run.hpp"

#include <chrono>

#include "parallax/inputs/search_flags.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "parallax/reports/report.hpp"
#include "parallax/simulator/sim_inputs.hpp"

namespace parallax::gui {

PlanOutcome plan_what_if(const WhatIfInputs& w) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanOutcome o;
  o.in = planner_inputs(w);
  o.topo = std::make_shared<const Topology>(o.in.cluster);
  o.search = search_plans(o.in, *o.topo, o.in.top_k > 0 ? simulator_refiner(o.in) : Refiner{});
  if (o.search.plans.empty()) throw no_plan_error(o.search, o.in.gpus);
  o.winner_sim = simulate_ranked(o, 0);
  const ResidualTable residuals = load_residuals();
  o.ties = tie_rule(residuals, kDefaultIntervalLevel);
  for (const RankedPlan& r : o.search.plans)
    o.intervals.push_back(prediction_interval(residuals, job_features(o.in.model, o.in.cluster, o.in.job, r.plan),
                                              kDefaultIntervalLevel));
  o.compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

SimResult simulate_ranked(const PlanOutcome& o, size_t index) {
  const PlanSpec& p = o.search.plans.at(index).plan;
  return simulate(make_sim_inputs(o.in.model, *o.topo, o.in.job, p, o.in.profile));
}

ScalingOutcome scaling_what_if(const PlannerInputs& in) {
  ScalingOutcome s;
  s.current_gpus = in.gpus;
  s.tokens = tokens_or_default(in.job, in.model);
  s.tokens_assumed = !(in.job.tokens > 0);
  s.price_per_gpu_hour_usd = in.job.price_per_gpu_hour_usd;
  s.rows = capacity_sweep(in, default_scaling_counts(in), s.tokens,
                          in.job.price_per_gpu_hour_usd);
  const ResidualTable residuals = load_residuals();
  for (const CapacityRow& r : s.rows)
    s.intervals.push_back(r.best ? prediction_interval(residuals, job_features(in.model, in.cluster, in.job, r.best->plan),
                                                       kDefaultIntervalLevel)
                                 : PredictionInterval{});
  return s;
}

}  // namespace parallax::gui
