#include "parallax/reports/charts.hpp"

#include <algorithm>
#include <cmath>

#include "parallax/reports/svg.hpp"

namespace parallax {
namespace {

constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kTop = 30;
constexpr double kBottom = 60;

// A "nice" axis maximum and tick step for values up to v.
std::pair<double, double> axis(double v) {
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

std::string legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s;
  for (const auto& [label, color] : items) {
    s += svg::rect(x, y - 9, 10, 10, color) + svg::text(x + 14, y, label, 11);
    x += 24 + 7.0 * static_cast<double>(label.size());
  }
  return s;
}

}  // namespace

std::string memory_chart(const Prediction& pr) {
  const double W = 820, H = 320, w = W - kLeft - kRight, h = H - kTop - kBottom;
  const double cap_gb = pr.capacity_bytes / 1e9;
  const auto [vmax, step] = axis(cap_gb);
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
  const auto [vmax, step] = axis(pr.iteration_time_s);
  std::string s = svg::open(W, H, "chart-time", "time per iteration by part");
  const std::pair<const char*, double> parts[] = {
      {"compute", pr.time.compute_s},  {"TP comm", pr.time.tp_comm_s},
      {"PP p2p", pr.time.pp_comm_s},   {"bubble", pr.time.bubble_s},
      {"DP comm", pr.time.dp_comm_exposed_s}, {"optimizer", pr.time.optimizer_s}};
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

std::string pipeline_chart(const SimResult& sim, int64_t pp) {
  const double W = 1000, row = std::clamp(360.0 / static_cast<double>(pp), 6.0, 28.0);
  const double h = row * static_cast<double>(pp);
  const double H = kTop + h + kBottom, w = W - kLeft - kRight;
  const auto [vmax, step] = axis(sim.iteration_time_s);
  std::string s = svg::open(W, H, "chart-pipeline", "simulated pipeline timeline of one iteration");
  for (int64_t r = 0; r < pp; ++r) {
    const double y = kTop + row * static_cast<double>(r);
    if (pp <= 40 || r % (pp / 20 + 1) == 0) {
      s += svg::text(kLeft - 6, y + row * 0.7, "rank " + std::to_string(r), 9, "end");
    }
  }
  for (const SimOp& op : sim.ops) {
    if (op.stream != SimStream::compute) continue;
    const bool fwd = op.kind == SimOpKind::forward;
    const bool bwd = op.kind == SimOpKind::backward;
    if (!fwd && !bwd && op.kind != SimOpKind::optimizer) continue;
    const double x = kLeft + op.start_s / vmax * w;
    const double bw = std::max(0.5, op.duration_s / vmax * w);
    const double y = kTop + row * static_cast<double>(op.rank) + 1;
    const std::string label = (fwd ? "F" : bwd ? "B" : "opt") +
                              (op.micro_batch >= 0 ? std::to_string(op.micro_batch) : std::string());
    s += svg::rect(x, y, bw, row - 2, fwd ? svg::color(0) : bwd ? svg::color(1) : svg::color(2),
                   "rank " + std::to_string(op.rank) + " " + label +
                       (op.chunk > 0 ? " chunk " + std::to_string(op.chunk) : "") + ": " +
                       svg::number(op.start_s, 3) + " s + " + svg::number(op.duration_s * 1e3, 1) + " ms");
    if (op.micro_batch >= 0 && bw > 7.0 * static_cast<double>(label.size()) && row >= 10) {
      s += svg::text(x + bw / 2, y + row * 0.65, std::to_string(op.micro_batch), 8, "middle",
                     "fill=\"#fff\"");
    }
  }
  for (double v = 0; v <= vmax + step / 2; v += step) {
    const double xx = kLeft + v / vmax * w;
    s += svg::line(xx, kTop + h, xx, kTop + h + 5, "#000");
    s += svg::text(xx, kTop + h + 17, svg::number(v, step < 1 ? 1 : 0), 10, "middle");
  }
  s += svg::text(kLeft + w / 2, kTop + h + 32, "seconds (one iteration, simulated)", 11, "middle");
  s += legend(kLeft, H - 6, {{"forward (micro-batch number inside)", svg::color(0)},
                             {"backward", svg::color(1)}, {"optimizer", svg::color(2)}});
  return s + svg::close();
}

std::string scaling_chart(const std::vector<CapacityRow>& rows) {
  const double W = 820, H = 320, w = W - kLeft - 70, h = H - kTop - kBottom;
  std::vector<const CapacityRow*> ok;
  for (const CapacityRow& r : rows) {
    if (r.best) ok.push_back(&r);
  }
  std::string s = svg::open(W, H, "chart-scaling", "scaling over GPU counts");
  if (ok.empty()) return s + svg::text(W / 2, H / 2, "no GPU count has a plan", 12, "middle") + svg::close();
  double tf_max = 0, days_max = 0;
  const double g0 = std::log2(static_cast<double>(ok.front()->gpus));
  const double g1 = std::max(g0 + 1, std::log2(static_cast<double>(ok.back()->gpus)));
  for (const CapacityRow* r : ok) {
    tf_max = std::max(tf_max, r->best->prediction.model_tflops_per_gpu);
    days_max = std::max(days_max, r->days);
  }
  const auto [tmax, tstep] = axis(tf_max);
  const auto [dmax, dstep] = axis(days_max);
  s += y_axis(kLeft, kTop, h, tmax, tstep, "model TFLOP/s per GPU", w);
  for (double v = 0; v <= dmax + dstep / 2; v += dstep) {
    const double y = kTop + h - v / dmax * h;
    s += svg::text(kLeft + w + 6, y + 4, svg::number(v, dstep < 1 ? 1 : 0), 10, "start");
  }
  s += svg::text(W - 10, kTop + h / 2, "days to train", 11, "middle",
                 "transform=\"rotate(90 " + svg::number(W - 10) + " " + svg::number(kTop + h / 2) + ")\"");
  auto xpos = [&](int64_t g) {
    return kLeft + (std::log2(static_cast<double>(g)) - g0) / (g1 - g0) * w;
  };
  std::string tf_pts, day_pts;
  for (const CapacityRow* r : ok) {
    const double x = xpos(r->gpus);
    const double yt = kTop + h - r->best->prediction.model_tflops_per_gpu / tmax * h;
    const double yd = kTop + h - r->days / dmax * h;
    tf_pts += svg::number(x) + "," + svg::number(yt) + " ";
    day_pts += svg::number(x) + "," + svg::number(yd) + " ";
    s += svg::circle(x, yt, 3.5, svg::color(0),
                     std::to_string(r->gpus) + " GPUs: " +
                         svg::number(r->best->prediction.model_tflops_per_gpu, 1) + " TFLOP/s/GPU");
    s += svg::circle(x, yd, 3.5, svg::color(1),
                     std::to_string(r->gpus) + " GPUs: " + svg::number(r->days, 1) + " days, $" +
                         svg::number(r->cost_usd, 0));
    s += svg::text(x, kTop + h + 14, std::to_string(r->gpus), 9, "middle");
    if (r->knee) {
      s += svg::line(x, kTop, x, kTop + h, "#D55E00", 1.5, "5,4");
      s += svg::text(x + 4, kTop + 12, "knee: scaling < 80%", 10, "start", "fill=\"#D55E00\"");
    }
  }
  s += svg::polyline(tf_pts, svg::color(0));
  s += svg::polyline(day_pts, svg::color(1));
  s += svg::text(kLeft + w / 2, H - 28, "GPUs (log scale)", 11, "middle");
  s += legend(kLeft, H - 8, {{"model TFLOP/s per GPU (left)", svg::color(0)},
                             {"days to train (right)", svg::color(1)}});
  return s + svg::close();
}

}  // namespace parallax
