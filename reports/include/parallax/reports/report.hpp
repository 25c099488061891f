#pragma once
// The capacity-planning report: the question asked, the top plans, the winner's memory and time,
// its simulated pipeline, the scaling curve, the sensitivity result, the FLOP conventions and the
// profile's provenance — as one self-contained HTML file (inline SVG and CSS, nothing fetched), as
// Markdown, or as JSON.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/capacity.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/planner/sensitivity.hpp"
#include "parallax/simulator/simulate.hpp"

namespace parallax {

struct ReportInputs {
  PlannerInputs planner;           // model, cluster, job, GPU count, profile, search options
  std::vector<int64_t> gpu_counts;  // scaling curve; empty = doubling up to the cluster
  int64_t top = 10;
  std::string version;
  double interval_level = kDefaultIntervalLevel;  // the prediction intervals' and ties' level
};

struct ReportData {
  ReportInputs in;
  SearchResult search;
  SimResult sim;  // the winner, every op recorded
  std::vector<CapacityRow> scaling;
  SensitivityReport sensitivity;
  bool tokens_assumed = false;  // no tokens given: kDefaultTokensPerParam per parameter
  ResidualTable residuals;      // what the intervals rest on (intervals.hpp)
  TieRule ties;                 // which plans are tied with the winner
};
// A plan's prediction interval at the report's level.
PredictionInterval plan_interval(const ReportData& d, const PlanSpec& p);

// The scaling curve's GPU counts when none are given: 8 nodes, doubling up to the cluster, and the
// question's own count.
std::vector<int64_t> default_scaling_counts(const PlannerInputs& in);

// Steps are announced through `progress` (planning, simulating, scaling, sensitivity).
// Without tokens in the job it assumes tokens_or_default() (capacity.hpp); the data's `in`
// carries the tokens used.
ReportData build_report(const ReportInputs& in,
                        const std::function<void(const std::string&)>& progress = {});

std::string render_html(const ReportData& d);
std::string render_markdown(const ReportData& d);
nlohmann::json render_json(const ReportData& d);

}  // namespace parallax
