#include "report_rows.hpp"

namespace parallax::report_rows {

std::string plan_cell(const PlanSpec& p) {
  std::string s = "tp " + std::to_string(p.tp) + " · pp " + std::to_string(p.pp);
  if (p.vpp > 1)
    s += " (vpp " + std::to_string(p.vpp) +
         (p.microbatch_group != 0 ? ", groups of " + std::to_string(p.microbatch_group) : "") + ")";
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    s += " (first " + std::to_string(p.first_stage_layers) + ", last " +
         std::to_string(p.last_stage_layers) + " layers)";
  }
  s += " · dp " + std::to_string(p.dp) + " · mbs " + std::to_string(p.micro_batch) + " · " +
       to_string(p.recompute) + (p.sequence_parallel ? " · sp" : "") +
       (p.zero > 0 ? " · ZeRO-" + std::to_string(p.zero) : "");
  return s;
}

std::vector<Row> top_rows(const ReportData& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.search.plans.size() && static_cast<int64_t>(i) < d.in.top; ++i) {
    const RankedPlan& r = d.search.plans[i];
    const Prediction& p = r.prediction;
    const double scale = p.iteration_time_s / r.time_s;  // throughput at the ranking time
    rows.push_back({plan_cell(r.plan), r.time_s, p.model_tflops_per_gpu * scale,
                    p.megatron_tflops_per_gpu * scale, p.mfu * scale, p.peak_bytes / 1e9,
                    r.headroom_bytes() / 1e9, p.time.bubble_s / p.iteration_time_s});
  }
  return rows;
}

}  // namespace parallax::report_rows
