#pragma once
// The residual table the prediction intervals rest on (costmodel/intervals.hpp), made from the
// corpus rows predicted out of sample, and the intervals' coverage on the corpus: each row's
// interval built from the other source groups' rows only, as a new job's would be.
#include <string>
#include <utility>
#include <vector>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/validation/validation.hpp"

namespace parallax {

// The rows of a leave-one-source-out cross-validation (cross_validate_by_source), as the table.
ResidualTable residual_table(const std::vector<ValidationRow>& out_of_sample);

struct Coverage {
  size_t rows = 0;
  size_t inside = 0;  // rows whose measured time lies in their interval
  double share() const { return rows == 0 ? 0 : static_cast<double>(inside) / static_cast<double>(rows); }
};
struct CoverageReport {
  double level = 0;
  Coverage all;
  std::vector<std::pair<std::string, Coverage>> by_source;  // in source order
  // The median over rows of the interval's half-width, (high - low) / 2 as a share of the
  // predicted time.
  double median_half_width = 0;
};
// Every row's interval at `level` from the rows of the other source groups.
CoverageReport interval_coverage(const ResidualTable& t, double level);

}  // namespace parallax
