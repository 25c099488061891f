#include "report_rows.hpp"

#include <cmath>

#include "parallax/reports/svg.hpp"

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
  const double winner_s = d.search.plans.empty() ? 0 : d.search.plans.front().time_s;
  for (size_t i = 0; i < d.search.plans.size() && static_cast<int64_t>(i) < d.in.top; ++i) {
    const RankedPlan& r = d.search.plans[i];
    const Prediction& p = r.prediction;
    const double scale = p.iteration_time_s / r.time_s;  // throughput at the ranking time
    const bool tied = i > 0 && d.ties.tied(r.time_s, winner_s);
    rows.push_back({std::to_string(i + 1) + (tied ? "=" : ""), plan_cell(r.plan), r.time_s,
                    p.model_tflops_per_gpu * scale, p.megatron_tflops_per_gpu * scale, p.mfu * scale,
                    p.peak_bytes / 1e9, r.headroom_bytes() / 1e9, p.time.bubble_s / p.iteration_time_s,
                    plan_interval(d, r.plan)});
  }
  return rows;
}

std::string with_range(double x, const PredictionInterval& iv, int precision) {
  const double hi = x * iv.high_ratio;
  return svg::number(x, precision) + " (" + svg::number(x * iv.low_ratio, precision) + "–" +
         (std::isfinite(hi) ? svg::number(hi, precision) : std::string("unbounded")) + ")";
}

std::string plans_note(const ReportData& d) {
  const std::string level = svg::number(d.in.interval_level * 100, 0) + "%";
  std::string s = "In brackets, the " + level +
                  " interval: the range that jobs like this one measured around their prediction, from the "
                  "corpus of published runs predicted out of sample (docs/predict.md). ";
  if (!std::isfinite(d.ties.log_ratio))
    return s + "Ties are not marked: fewer than " + std::to_string(d.ties.needed) + " sweeps of the corpus.";
  return s + "“=” marks a plan tied with #1: within " + svg::number((std::exp(d.ties.log_ratio) - 1) * 100, 1) +
         "% of its time, the " + level + " error of the ratio of two plans' times (" + std::to_string(d.ties.pairs) +
         " pairs in " + std::to_string(d.ties.sweeps) + " sweeps of the corpus): which is faster, a short "
         "measurement run should say.";
}

}  // namespace parallax::report_rows
