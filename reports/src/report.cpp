#include "parallax/reports/report.hpp"

#include <algorithm>

#include "parallax/core/error.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "parallax/simulator/sim_inputs.hpp"

namespace parallax {

std::vector<int64_t> default_scaling_counts(const PlannerInputs& in) {
  std::vector<int64_t> out;
  const ClusterSpec& c = in.given_cluster();
  for (int64_t n = c.gpus_per_node * 8; n <= c.total_gpus(); n *= 2) out.push_back(n);
  if (std::find(out.begin(), out.end(), in.gpus) == out.end()) {
    out.push_back(in.gpus);
    std::sort(out.begin(), out.end());
  }
  return out;
}

ReportData build_report(const ReportInputs& in,
                        const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  ReportData d;
  d.in = in;
  d.tokens_assumed = !(in.planner.job.tokens > 0);
  d.in.planner.job.tokens = tokens_or_default(in.planner.job, in.planner.model);
  say("planning");
  const Topology topo(in.planner.cluster);
  d.search = search_plans(in.planner, topo, simulator_refiner(in.planner));
  if (d.search.plans.empty()) {
    throw InputError("command line", "--gpus",
                     "no plan fits for " + std::to_string(in.planner.gpus) +
                         " GPUs; see `parallax plan --explain`");
  }
  say("simulating the winner");
  const RankedPlan& win = d.search.plans.front();
  d.sim = simulate(make_sim_inputs(in.planner.model, topo, in.planner.job, win.plan,
                                   in.planner.profile));
  say("scaling curve");
  const std::vector<int64_t> counts = in.gpu_counts.empty() ? default_scaling_counts(in.planner) : in.gpu_counts;
  d.scaling = capacity_sweep(in.planner, counts, d.in.planner.job.tokens,
                             in.planner.job.price_per_gpu_hour_usd);
  say("sensitivity");
  d.sensitivity = sensitivity_analysis(in.planner, d.search);
  d.residuals = load_residuals();
  d.ties = tie_rule(d.residuals, in.interval_level);
  return d;
}

PredictionInterval plan_interval(const ReportData& d, const PlanSpec& p) {
  const PlannerInputs& in = d.in.planner;
  return prediction_interval(d.residuals, job_features(in.model, in.cluster, in.job, p), d.in.interval_level);
}

}  // namespace parallax
