// The report as Markdown and as JSON: the same figures and the same assumptions as the HTML.
#include <cmath>

#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/reports/report.hpp"
#include "parallax/reports/svg.hpp"
#include "report_notes.hpp"
#include "report_rows.hpp"

namespace parallax {
namespace {

using svg::number;

std::string md_definitions(const std::vector<report_notes::Column>& cols) {
  std::string s = "\nColumns:\n\n";
  for (const report_notes::Column& c : cols) s += "- **" + c.name + "**: " + c.definition + "\n";
  return s;
}

}  // namespace

std::string render_markdown(const ReportData& d) {
  const PlannerInputs& in = d.in.planner;
  std::string s = "# How to train " + in.model.name + " on " + std::to_string(in.gpus) + " × " +
                  in.cluster.gpu.name + "\n\nTraining length: " + report_notes::tokens_assumption(d) +
                  ".\n\nPrice: " + report_notes::price_assumption(d) +
                  ".\n\n## Top plans\n\n| # | plan | iteration s | model TFLOP/s/GPU | "
                  "Megatron TFLOP/s/GPU | MFU | peak GB/GPU | headroom GB | bubble |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const report_rows::Row& r : report_rows::top_rows(d)) {
    s += "| " + r.rank + " | " + r.plan + " | " + report_rows::with_range(r.time_s, r.interval, 3) + " | " +
         number(r.model_tf, 1) + " | " + number(r.megatron_tf, 1) + " | " + number(r.mfu * 100, 1) +
         "% | " + number(r.peak_gb, 1) + " | " + number(r.headroom_gb, 1) + " | " +
         number(r.bubble * 100, 1) + "% |\n";
  }
  s += "\n" + report_rows::plans_note(d) + "\n";
  s += md_definitions(report_notes::plans_columns());
  s += "\n## Scaling\n\nDays, GPU-hours and cost assume " + report_notes::tokens_assumption(d) +
       ". Cost: " + report_notes::price_assumption(d) +
       ".\n\n| GPUs | days | GPU-hours | cost USD | scaling |\n|---|---|---|---|---|\n";
  for (const CapacityRow& r : d.scaling) {
    if (!r.best) continue;
    const PredictionInterval iv = plan_interval(d, r.best->plan);
    s += "| " + std::to_string(r.gpus) + " | " + report_rows::with_range(r.days, iv, 1) + " | " +
         report_rows::with_range(r.gpu_hours, iv, 0) +
         " | " + report_notes::cost_cell(d, r) + " | " + number(r.scaling_efficiency * 100, 1) + "%" +
         (r.knee ? " (knee)" : "") + " |\n";
  }
  std::vector<report_notes::Column> cols;
  for (const report_notes::Column& c : report_notes::scaling_columns(d)) {
    if (c.name == "GPUs" || c.name == "days" || c.name == "GPU-hours" || c.name == "cost USD" ||
        c.name == "scaling") {
      cols.push_back(c);
    }
  }
  s += md_definitions(cols);
  const std::string above = report_notes::scaling_above_100(d);
  if (!above.empty()) s += "\n" + above + "\n";
  s += std::string("\nWinner stays in the top 3 under ±20% perturbations: ") +
       (d.sensitivity.winner_stays_top3 ? "yes" : "no") + "\n\nProfile: " + in.profile.name + "\n";
  return s;
}

nlohmann::json render_json(const ReportData& d) {
  nlohmann::json plans = nlohmann::json::array();
  for (size_t i = 0; i < d.search.plans.size() && static_cast<int64_t>(i) < d.in.top; ++i) {
    nlohmann::json j = to_json(d.search.plans[i].prediction);
    j["plan"] = to_json(d.search.plans[i].plan);
    j["ranking_time_s"] = d.search.plans[i].time_s;
    j["interval"] = interval_json(plan_interval(d, d.search.plans[i].plan), d.search.plans[i].prediction);
    j["tied_with_winner"] = i > 0 && d.ties.tied(d.search.plans[i].time_s, d.search.plans.front().time_s);
    plans.push_back(j);
  }
  nlohmann::json scaling = nlohmann::json::array();
  for (const CapacityRow& r : d.scaling) {
    nlohmann::json j = {{"gpus", r.gpus}, {"cluster", r.cluster}, {"knee", r.knee}};
    if (r.best) {
      j["days"] = r.days;
      j["gpu_hours"] = r.gpu_hours;
      const std::optional<double> cost = report_notes::cost_usd(d, r);
      j["cost_usd"] = cost ? nlohmann::json(*cost) : nlohmann::json(nullptr);  // null: no price
      j["scaling_efficiency"] = r.scaling_efficiency;
      j["plan"] = to_json(r.best->plan);
      const PredictionInterval iv = plan_interval(d, r.best->plan);
      j["interval"] = {{"level", iv.level},
                       {"days", {r.days * iv.low_ratio, r.days * iv.high_ratio}},
                       {"gpu_hours", {r.gpu_hours * iv.low_ratio, r.gpu_hours * iv.high_ratio}},
                       {"sources", iv.sources},
                       {"basis", iv.basis},
                       {"dropped", iv.dropped}};
    }
    scaling.push_back(j);
  }
  const double price = d.in.planner.job.price_per_gpu_hour_usd;
  nlohmann::json assumptions = {
      {"tokens", d.in.planner.job.tokens},
      {"tokens_assumed", d.tokens_assumed},
      {"tokens_per_parameter", report_notes::tokens_per_param(d)},
      {"tokens_note", report_notes::tokens_assumption(d)},
      {"price_per_gpu_hour_usd", price_known(price) ? nlohmann::json(price) : nlohmann::json(nullptr)},
      {"price_note", report_notes::price_assumption(d)},
      {"scaling_reference_gpus", report_notes::scaling_reference_gpus(d)}};
  nlohmann::json columns = nlohmann::json::object();
  for (const report_notes::Column& c : report_notes::scaling_columns(d)) columns[c.name] = c.definition;
  const TieRule& t = d.ties;
  return {{"plans", plans},
          {"ties", {{"level", t.level},
                    {"ratio", std::isfinite(t.log_ratio) ? nlohmann::json(std::exp(t.log_ratio)) : nlohmann::json()},
                    {"sweeps", t.sweeps},
                    {"pairs", t.pairs}}},
          {"scaling", scaling},
          {"scaling_columns", columns},
          {"assumptions", assumptions},
          {"simulated_iteration_time_s", d.sim.iteration_time_s},
          {"winner_stays_top3", d.sensitivity.winner_stays_top3},
          {"profile", d.in.planner.profile.name},
          {"version", d.in.version}};
}

}  // namespace parallax
