#include "parallax/reports/charts.hpp"

#include <algorithm>
#include <cmath>

#include "chart_axes.hpp"
#include "parallax/reports/svg.hpp"

namespace parallax {

using chart::kBottom;
using chart::kLeft;
using chart::kRight;
using chart::kTop;
using chart::legend;
using chart::y_axis;

std::string memory_chart(const Prediction& pr) {
  const double W = 820, H = 320, w = W - kLeft - kRight, h = H - kTop - kBottom;
  const double cap_gb = pr.capacity_bytes / 1e9;
  const auto [vmax, step] = chart::nice_axis(cap_gb);
  std::string s = svg::open(W, H, "chart-memory", "memory per GPU by pipeline stage");
  s += y_axis(kLeft, kTop, h, vmax, step, "GB per GPU", w);
  const size_t n = pr.memory.size();
  const double slot = w / static_cast<double>(n);
  const double bw = std::max(1.0, slot * 0.8);
  const char* names[] = {"weights", "grads", "optimizer", "activations", "buffers"};
  for (size_t i = 0; i < n; ++i) {
    const StageMemory& m = pr.memory[i];
    const double parts[] = {m.weights_bytes, m.grads_bytes, m.optimizer_bytes,
                            m.activations_bytes, m.buffers_bytes};
    double base = 0;
    const double x = kLeft + slot * static_cast<double>(i) + (slot - bw) / 2;
    for (int k = 0; k < 5; ++k) {
      const double gb = parts[k] / 1e9;
      const double y = kTop + h - (base + gb) / vmax * h;
      s += svg::rect(x, y, bw, gb / vmax * h, svg::color(k),
                     "stage " + std::to_string(i) + " " + names[k] + ": " + svg::number(gb, 2) + " GB");
      base += gb;
    }
    if (n <= 40 || i % (n / 20 + 1) == 0) {
      s += svg::text(x + bw / 2, kTop + h + 14, std::to_string(i), 9, "middle");
    }
  }
  // Capacity, and the reserve below it: what is left between the bars and that line is headroom.
  const double y_cap = kTop + h - cap_gb / vmax * h;
  const double y_res = kTop + h - (cap_gb - pr.reserve_bytes / 1e9) / vmax * h;
  s += svg::rect(kLeft, y_cap, w, y_res - y_cap, "#D55E00", "reserve " + svg::number(pr.reserve_bytes / 1e9, 1) + " GB") ;
  s += svg::line(kLeft, y_cap, kLeft + w, y_cap, "#000", 1.5);
  s += svg::text(kLeft + w - 4, y_cap - 4,
                 "capacity " + svg::number(cap_gb, 1) + " GB (reserve shaded); headroom of stage " +
                     std::to_string(pr.peak_stage) + ": " +
                     svg::number((pr.capacity_bytes - pr.peak_bytes - pr.reserve_bytes) / 1e9, 1) + " GB",
                 10, "end");
  s += svg::text(kLeft + w / 2, H - 28, "pipeline stage", 11, "middle");
  s += legend(kLeft, H - 8, {{"weights", svg::color(0)}, {"grads", svg::color(1)},
                             {"optimizer", svg::color(2)}, {"activations", svg::color(3)},
                             {"buffers", svg::color(4)}, {"reserve", "#D55E00"}});
  return s + svg::close();
}

std::string time_chart(const Prediction& pr) {
  const double W = 820, H = 150, w = W - kLeft - kRight;
  const auto [vmax, step] = chart::nice_axis(pr.iteration_time_s);
  std::string s = svg::open(W, H, "chart-time", "time per iteration by part");
  const std::vector<std::pair<const char*, double>> parts = chart_time_parts(pr.time);
  double x = kLeft;
  int k = 0;
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& [name, sec] : parts) {
    const double bw = sec / vmax * w;
    s += svg::rect(x, 30, bw, 40, svg::color(k),
                   std::string(name) + ": " + svg::number(sec, 3) + " s");
    items.push_back({std::string(name) + " " + svg::number(sec, 2) + " s", svg::color(k)});
    x += bw;
    ++k;
  }
  for (double v = 0; v <= vmax + step / 2; v += step) {
    const double xx = kLeft + v / vmax * w;
    s += svg::line(xx, 72, xx, 78, "#000");
    s += svg::text(xx, 90, svg::number(v, step < 1 ? 1 : 0), 10, "middle");
  }
  s += svg::text(kLeft + w / 2, 106, "seconds per iteration", 11, "middle");
  s += legend(kLeft, 135, items);
  return s + svg::close();
}

}  // namespace parallax
