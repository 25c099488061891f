// The simulated pipeline of one iteration. Small pipelines show every step of every rank; large
// ones (MT-NLG: 35 ranks x 240 micro-batches, 16,800 steps) would blend into one colour, so they
// show a representative subset of ranks and bin each rank's steps into the schedule's phases.
#include <algorithm>
#include <array>

#include "chart_axes.hpp"
#include "parallax/reports/charts.hpp"
#include "parallax/reports/pipeline_phases.hpp"
#include "parallax/reports/svg.hpp"

namespace parallax {
namespace {

using chart::kLeft;
using chart::kTop;

const char* kBubble = "#d9d9d9";

// A phase's bar: its height split by the share of forward, backward, exposed communication and
// bubble over the phase's time span.
std::string phase_bar(const PipelinePhase& p, int64_t rank, double x, double y, double bw, double bh) {
  const double len = p.end_s - p.start_s;
  const std::array<std::pair<const char*, double>, 4> parts = {
      {{"forward", p.forward_s}, {"backward", p.backward_s}, {"communication", p.comm_s}, {"bubble", p.bubble_s}}};
  const std::array<std::string, 4> fills = {svg::color(0), svg::color(1), svg::color(3), kBubble};
  std::string s;
  double yy = y;
  for (size_t k = 0; k < parts.size(); ++k) {
    const double share = parts[k].second / len;
    if (share <= 0) continue;
    s += svg::rect(x, yy, bw, share * bh, fills[k],
                   "rank " + std::to_string(rank) + " " + p.name + " (" + svg::number(p.start_s, 3) + "-" +
                       svg::number(p.end_s, 3) + " s): " + parts[k].first + " " +
                       svg::number(parts[k].second, 3) + " s, " + svg::number(share * 100, 1) + "%");
    yy += share * bh;
  }
  return s;
}

// "forward 3 (micro-batch 3, chunk 1): 1.234 s + 5.6 ms"
std::string step_title(const SimOp& op, int64_t index) {
  std::string t = op.kind == SimOpKind::forward ? "forward " : "backward ";
  t += std::to_string(index) + " (micro-batch " + std::to_string(op.micro_batch);
  if (op.chunk > 0) t += ", chunk " + std::to_string(op.chunk);
  return t + "): " + svg::number(op.start_s, 3) + " s + " + svg::number(op.duration_s * 1e3, 1) + " ms";
}

// Rank r's row at y (row high), unbinned: idle until `end` (its optimizer step, or the iteration's
// end), under each forward and backward step's bar, labelled with its micro-batch where it fits.
std::string step_bars(const SimResult& sim, int64_t r, double y, double row, double end, double vmax,
                      double w) {
  auto xpos = [&](double t) { return kLeft + t / vmax * w; };
  std::string s = svg::rect(xpos(0), y + 1, end / vmax * w, row - 2, kBubble);
  int64_t fwd = 0, bwd = 0;
  for (const SimOp& op : sim.ops) {
    if (op.stream != SimStream::compute || op.rank != r) continue;
    const bool f = op.kind == SimOpKind::forward;
    if (!f && op.kind != SimOpKind::backward) continue;
    const double bw = std::max(0.5, op.duration_s / vmax * w);
    std::string label = f ? "F" : "B";
    label += std::to_string(op.micro_batch);
    s += svg::rect(xpos(op.start_s), y + 1, bw, row - 2, svg::color(f ? 0 : 1),
                   "rank " + std::to_string(r) + " " + step_title(op, f ? fwd++ : bwd++));
    if (op.micro_batch >= 0 && bw > 7.0 * static_cast<double>(label.size()) && row >= 10) {
      s += svg::text(xpos(op.start_s) + bw / 2, y + row * 0.65, std::to_string(op.micro_batch), 8,
                     "middle", "fill=\"#fff\"");
    }
  }
  return s;
}

}  // namespace

std::vector<int64_t> pipeline_rows(int64_t pp) {
  std::vector<int64_t> picks;
  if (pp <= kPipelineMaxRanks) {
    for (int64_t r = 0; r < pp; ++r) picks.push_back(r);
    return picks;
  }
  picks = {0, 1, 2, pp / 2 - 1, pp / 2, pp - 3, pp - 2, pp - 1};
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  std::vector<int64_t> out;
  for (int64_t r : picks) {
    if (!out.empty() && r > out.back() + 1) out.push_back(-1);
    out.push_back(r);
  }
  return out;
}

std::string pipeline_chart(const SimResult& sim, int64_t pp) {
  const std::vector<int64_t> rows = pipeline_rows(pp);
  const int64_t steps = pipeline_steps_per_rank(sim);
  const bool binned = steps > kPipelineMaxSteps;
  const bool subset = static_cast<int64_t>(rows.size()) != pp;
  const double W = 1000, w = W - kLeft - chart::kRight;
  const double row = binned ? 34 : std::clamp(360.0 / static_cast<double>(rows.size()), 14.0, 28.0);
  const double gap_row = 16;
  double h = 0;
  for (int64_t r : rows) h += r < 0 ? gap_row : row;
  const double top = kTop + 6;
  const double H = top + h + 66;
  const auto [vmax, step] = chart::nice_axis(sim.iteration_time_s);
  std::string s = svg::open(W, H, "chart-pipeline", "simulated pipeline timeline of one iteration");
  std::string caption = "All " + std::to_string(pp) + " pipeline ranks, every forward and backward step";
  if (subset) {
    const auto shown = static_cast<int64_t>(rows.size()) - std::count(rows.begin(), rows.end(), -1);
    caption = "Ranks shown: " + std::to_string(shown) + " of " + std::to_string(pp) +
              " (first, middle and last)";
  }
  s += svg::text(kLeft, 14, caption, 10, "start", "class=\"caption\"");
  if (binned) {
    s += svg::text(kLeft, 27,
                   std::to_string(steps) + " micro-batch steps per rank, binned into phases: each bar's "
                   "height is split by its share of forward, backward, exposed communication and bubble",
                   10, "start", "class=\"caption\"");
  }
  double y = top;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    if (r < 0) {  // the gap: which ranks are not drawn
      const int64_t from = rows[i - 1] + 1, to = rows[i + 1] - 1;
      s += svg::line(kLeft, y + gap_row / 2, kLeft + w, y + gap_row / 2, "#999", 1, "2,4");
      s += svg::text(kLeft + w / 2, y + gap_row / 2 + 4,
                     "ranks " + std::to_string(from) + "-" + std::to_string(to) + " not shown", 10,
                     "middle", "class=\"gap\" fill=\"#555\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\"");
      y += gap_row;
      continue;
    }
    s += svg::text(kLeft - 6, y + row / 2 + 3, "rank " + std::to_string(r), 9, "end", "class=\"rank-label\"");
    auto xpos = [&](double t) { return kLeft + t / vmax * w; };
    const std::vector<std::pair<double, double>> opt = optimizer_steps(sim, r);
    if (binned) {
      for (const PipelinePhase& p : pipeline_phases(sim, r)) {
        const double x = xpos(p.start_s), bw = std::max(0.5, (p.end_s - p.start_s) / vmax * w);
        s += phase_bar(p, r, x, y + 12, bw, row - 14);
        if (bw > 6.0 * static_cast<double>(std::string(p.name).size())) {
          s += svg::text(x + bw / 2, y + 10, p.name, 9, "middle", "class=\"phase\"");
        }
      }
    } else {
      const double end = opt.empty() ? sim.iteration_time_s : opt.front().first;
      s += step_bars(sim, r, y, row, end, vmax, w);
    }
    const double top_y = binned ? y + 12 : y + 1, bar_h = binned ? row - 14 : row - 2;
    for (const auto& [a, b] : opt) {
      s += svg::rect(xpos(a), top_y, std::max(0.5, (b - a) / vmax * w), bar_h, svg::color(2),
                     "rank " + std::to_string(r) + " optimizer: " + svg::number((b - a) * 1e3, 1) + " ms");
    }
    y += row;
  }
  for (double v = 0; v <= vmax + step / 2; v += step) {
    const double xx = kLeft + v / vmax * w;
    s += svg::line(xx, top + h, xx, top + h + 5, "#000");
    s += svg::text(xx, top + h + 17, svg::number(v, step < 1 ? 1 : 0), 10, "middle");
  }
  s += svg::text(kLeft + w / 2, top + h + 32, "seconds (one iteration, simulated)", 11, "middle");
  std::vector<std::pair<std::string, std::string>> items = {
      {"forward", svg::color(0)}, {"backward", svg::color(1)}};
  if (binned) items.push_back({"exposed communication", svg::color(3)});
  items.push_back({binned ? "bubble (idle)" : "idle: bubble or waiting on a transfer", kBubble});
  items.push_back({"optimizer", svg::color(2)});
  s += chart::legend(kLeft, H - 8, items);
  return s + svg::close();
}

}  // namespace parallax
