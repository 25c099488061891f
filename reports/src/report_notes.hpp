#pragma once
// The words next to the report's figures: the assumptions a figure depends on (tokens per
// parameter, price per GPU-hour) and what each table column means. Shared by the HTML, Markdown
// and JSON renderings so they say the same. Private to the reports library.
#include <optional>
#include <string>
#include <vector>

#include "parallax/reports/report.hpp"

namespace parallax::report_notes {

// "10.6T tokens = 20 tokens per parameter x 530.2B parameters, the Chinchilla rule of thumb
// (Hoffmann et al. 2022; no --tokens given)", or the tokens given.
std::string tokens_assumption(const ReportData& d);
// A short form for chart titles: "20 tokens/parameter (Chinchilla)" or "300B tokens".
std::string tokens_short(const ReportData& d);
double tokens_per_param(const ReportData& d);

// "$2.00 per GPU-hour (--price)" or "no --price given".
std::string price_assumption(const ReportData& d);
// The row's cost, or nothing when no price was given.
std::optional<double> cost_usd(const ReportData& d, const CapacityRow& r);
// The cost as a table cell: the number, or an em dash when unknown.
std::string cost_cell(const ReportData& d, const CapacityRow& r);

// The scaling curve's reference: the first GPU count with a plan (0 when none has one).
int64_t scaling_reference_gpus(const ReportData& d);
// Why some scaling efficiencies exceed 100% (empty when none does): the reference's plan is less
// efficient per GPU than the larger counts' plans.
std::string scaling_above_100(const ReportData& d);

struct Column {
  std::string name;
  std::string definition;
};
std::vector<Column> plans_columns();
std::vector<Column> scaling_columns(const ReportData& d);
std::vector<Column> sensitivity_columns();

}  // namespace parallax::report_notes
