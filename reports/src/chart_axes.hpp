#pragma once
// What the report's SVG charts share: margins, "nice" linear axes, log axes for values that span
// decades, and the legend. Private to the reports library.
#include <string>
#include <utility>
#include <vector>

namespace parallax::chart {

inline constexpr double kLeft = 70;
inline constexpr double kRight = 20;
inline constexpr double kTop = 30;
inline constexpr double kBottom = 60;

// A "nice" axis maximum and tick step for values up to v.
std::pair<double, double> nice_axis(double v);

// Horizontal grid lines and labels of a linear axis from 0 to vmax, its unit rotated at the left.
std::string y_axis(double x0, double y0, double h, double vmax, double step, const std::string& unit,
                   double width);

// Values spanning more than a decade (max / min > 10) read better on a log axis.
bool spans_decades(double min_v, double max_v);

// A base-10 log axis from the 1, 2 or 5 times a power of ten at or below min_v to the one at or
// above max_v (at least a decade).
struct LogAxis {
  double lo_exp = 0;  // log10 of the axis bottom
  double hi_exp = 1;  // log10 of the axis top
  // The fraction of the axis height at which v sits (0 bottom, 1 top).
  double fraction(double v) const;
};
LogAxis log_axis(double min_v, double max_v);

// A tick of a log axis: powers of ten (major) and 2 and 5 times them (minor), each labelled.
struct LogTick {
  double value;
  bool major;
};
std::vector<LogTick> log_ticks(const LogAxis& a);

// Swatches and labels in a row, wrapped in <g class="legend">.
std::string legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items);

}  // namespace parallax::chart
