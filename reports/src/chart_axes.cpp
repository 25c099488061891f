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

namespace {

// The 1, 2, 5 times a power of ten nearest to v: at or below it (down) or at or above it.
double nice_125(double v, bool down) {
  const double e = std::floor(std::log10(v));
  double best = down ? std::pow(10, e) : std::pow(10, e + 1);
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    const double c = m * std::pow(10, e);
    if (down && c <= v * (1 + 1e-12)) best = c;
    if (!down && c >= v * (1 - 1e-12)) return c;
  }
  return best;
}

}  // namespace

LogAxis log_axis(double min_v, double max_v) {
  LogAxis a;
  a.lo_exp = std::log10(nice_125(min_v, true));
  a.hi_exp = std::log10(nice_125(max_v, false));
  if (a.hi_exp - a.lo_exp < 1) a.hi_exp = a.lo_exp + 1;
  return a;
}

std::vector<LogTick> log_ticks(const LogAxis& a) {
  std::vector<LogTick> out;
  for (double e = std::floor(a.lo_exp + 1e-9); e <= a.hi_exp + 1e-9; ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10, e);
      const double x = std::log10(v);
      if (x < a.lo_exp - 1e-9 || x > a.hi_exp + 1e-9) continue;
      out.push_back({v, m == 1.0});
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
