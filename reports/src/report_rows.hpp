#pragma once
// The plans table's rows, shared by the HTML and Markdown renderings. Private to the reports library.
#include <string>
#include <vector>

#include "parallax/costmodel/intervals.hpp"

#include "parallax/reports/report.hpp"

namespace parallax::report_rows {

std::string plan_cell(const PlanSpec& p);

struct Row {
  std::string rank;  // "2=": tied with the winner (ReportData::ties)
  std::string plan;
  double time_s, model_tf, megatron_tf, mfu, peak_gb, headroom_gb, bubble;
  PredictionInterval interval;
};

// "19.9 (16.8–24.7)": a figure proportional to the iteration time and its interval.
std::string with_range(double x, const PredictionInterval& iv, int precision);
// What the rank's "=" and the brackets mean, with the figures they rest on.
std::string plans_note(const ReportData& d);

// The top plans at their ranking (simulator-refined) times.
std::vector<Row> top_rows(const ReportData& d);

}  // namespace parallax::report_rows
