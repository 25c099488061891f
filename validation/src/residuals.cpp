#include "parallax/validation/residuals.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace parallax {

ResidualTable residual_table(const std::vector<ValidationRow>& out_of_sample) {
  ResidualTable t;
  t.source =
      "The validation corpus (validation/runs/) predicted out of sample: each row by profiles fitted "
      "without its source group (parallax validate --cross-validate source). Written by parallax fit "
      "--residuals; the prediction intervals of predict, plan and capacity rest on it "
      "(costmodel/intervals.hpp, docs/predict.md).";
  for (const ValidationRow& v : out_of_sample) {
    ResidualRow x;
    x.id = v.id;
    x.source = v.source;
    x.group = v.group;
    x.sweep = v.sweep;
    x.features = job_features(v.model, v.cluster, v.job, v.plan);
    x.predicted_iteration_time_s = v.predicted_iteration_time_s;
    x.measured_iteration_time_s = v.measured_iteration_time_s;
    t.rows.push_back(std::move(x));
  }
  return t;
}

CoverageReport interval_coverage(const ResidualTable& t, double level) {
  CoverageReport out;
  out.level = level;
  std::map<std::string, Coverage> by_source;
  std::vector<std::string> order;
  std::vector<double> half_widths;
  for (const ResidualRow& x : t.rows) {
    const PredictionInterval iv = prediction_interval(t, x.features, level, x.group);
    const double ratio = x.measured_iteration_time_s / x.predicted_iteration_time_s;
    const bool inside = iv.low_ratio <= ratio && ratio <= iv.high_ratio;
    if (!by_source.contains(x.source)) order.push_back(x.source);
    for (Coverage* c : {&out.all, &by_source[x.source]}) {
      ++c->rows;
      c->inside += inside ? 1 : 0;
    }
    half_widths.push_back((iv.high_ratio - iv.low_ratio) / 2);
  }
  for (const std::string& s : order) out.by_source.emplace_back(s, by_source[s]);
  if (!half_widths.empty()) {
    std::sort(half_widths.begin(), half_widths.end());
    const size_t n = half_widths.size();
    out.median_half_width = n % 2 == 1 ? half_widths[n / 2] : (half_widths[n / 2 - 1] + half_widths[n / 2]) / 2;
  }
  return out;
}

}  // namespace parallax
