#include "chart_axes.hpp"

#include <cmath>

#include "parallax/reports/svg.hpp"

namespace parallax::chart {

std::pair<double, double> nice_axis(double v) {
  if (v <= 0) return {1, 0.2};
  const double mag = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= v) return {m * mag, m * mag / 5};
  }
  return {10 * mag, 2 * mag};
}

std::string y_axis(double x0, double y0, double h, double vmax, double step, const std::string& unit,
                   double width) {
  std::string s;
  for (double v = 0; v <= vmax + step / 2; v += step) {
    const double y = y0 + h - v / vmax * h;
    s += svg::line(x0, y, x0 + width, y, "#e0e0e0");
    s += svg::text(x0 - 6, y + 4, svg::number(v, step < 1 ? 1 : 0), 10, "end");
  }
  s += svg::text(14, y0 + h / 2, unit, 11, "middle",
                 "transform=\"rotate(-90 14 " + svg::number(y0 + h / 2) + ")\"");
  return s;
}

bool spans_decades(double min_v, double max_v) { return min_v > 0 && max_v / min_v > 10; }

double LogAxis::fraction(double v) const {
  return (std::log10(v) - lo_exp) / (hi_exp - lo_exp);
}

LogAxis log_axis(double min_v, double max_v) {
  LogAxis a;
  a.lo_exp = std::floor(std::log10(min_v));
  a.hi_exp = std::max(a.lo_exp + 1, std::ceil(std::log10(max_v)));
  return a;
}

std::vector<LogTick> log_ticks(const LogAxis& a) {
  std::vector<LogTick> out;
  for (double e = a.lo_exp; e <= a.hi_exp + 0.5; ++e) {
    const double p = std::pow(10, e);
    out.push_back({p, true});
    if (e + 0.5 < a.hi_exp) {
      out.push_back({2 * p, false});
      out.push_back({5 * p, false});
    }
  }
  return out;
}

std::string legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "<g class=\"legend\">";
  for (const auto& [label, color] : items) {
    s += svg::rect(x, y - 9, 10, 10, color) + svg::text(x + 14, y, label, 11, "start", "class=\"legend-item\"");
    x += 24 + 6.5 * static_cast<double>(label.size());
  }
  return s + "</g>";
}

}  // namespace parallax::chart
