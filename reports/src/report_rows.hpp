#pragma once
// The plans table's rows, shared by the HTML and Markdown renderings. Private to the reports library.
#include <string>
#include <vector>

#include "parallax/reports/report.hpp"

namespace parallax::report_rows {

std::string plan_cell(const PlanSpec& p);

struct Row {
  std::string plan;
  double time_s, model_tf, megatron_tf, mfu, peak_gb, headroom_gb, bubble;
};

// The top plans at their ranking (simulator-refined) times.
std::vector<Row> top_rows(const ReportData& d);

}  // namespace parallax::report_rows
