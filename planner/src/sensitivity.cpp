#include "parallax/planner/sensitivity.hpp"

#include <algorithm>

namespace parallax {
namespace {

EfficiencyProfile scaled(EfficiencyProfile p, double s) {
  for (auto& [dim, eff] : p.gemm_efficiency_by_min_dim) eff = std::min(1.0, eff * s);
  p.memory_bound_efficiency = std::min(1.0, p.memory_bound_efficiency * s);
  return p;
}

ClusterSpec scaled(ClusterSpec c, double nvlink, double network) {
  c.intra.nvlink_bandwidth_bytes_per_s *= nvlink;
  c.intra.allreduce_busbw_bytes_per_s *= nvlink;
  c.intra.p2p_bandwidth_bytes_per_s *= nvlink;
  c.inter.nic_effective_bandwidth_bytes_per_s *= network;
  c.inter.nic_bandwidth_bytes_per_s =
      std::max(c.inter.nic_bandwidth_bytes_per_s, c.inter.nic_effective_bandwidth_bytes_per_s);
  return c;
}

}  // namespace

SensitivityReport sensitivity_analysis(const PlannerInputs& in, const SearchResult& base,
                                       double delta) {
  SensitivityReport rep;
  if (base.plans.empty()) return rep;
  const double lo = 1 - delta;
  const double hi = 1 + delta;
  const std::vector<Perturbation> cases = {
      {"compute -20%", lo, 1, 1}, {"compute +20%", hi, 1, 1}, {"NVLink -20%", 1, lo, 1},
      {"NVLink +20%", 1, hi, 1},  {"network -20%", 1, 1, lo}, {"network +20%", 1, 1, hi},
      {"worst case (all -20%)", lo, lo, lo}};
  const PlanSpec& winner = base.plans.front().plan;
  for (const Perturbation& pert : cases) {
    const EfficiencyProfile prof = scaled(in.profile, pert.compute_scale);
    const Topology topo(scaled(in.cluster, pert.nvlink_scale, pert.network_scale));
    std::vector<RankedPlan> ranked;
    ranked.reserve(base.plans.size());
    for (const RankedPlan& r : base.plans) {
      RankedPlan x;
      x.plan = r.plan;
      x.prediction = predict(in.model, topo, in.job, r.plan, prof);
      x.time_s = x.prediction.iteration_time_s;
      ranked.push_back(std::move(x));
    }
    std::stable_sort(ranked.begin(), ranked.end(), ranks_before);
    SensitivityCase sc;
    sc.perturbation = pert;
    sc.best = ranked.front();
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (ranked[i].plan == winner) {
        sc.winner_rank = static_cast<int64_t>(i);
        break;
      }
    }
    rep.winner_stays_top3 = rep.winner_stays_top3 && sc.winner_rank < 3;
    rep.cases.push_back(std::move(sc));
  }
  return rep;
}

}  // namespace parallax
