// The simulated pipeline of one iteration. Small pipelines show every step of every rank; large
// ones (MT-NLG: 35 ranks x 240 micro-batches, 16,800 steps) would blend into one colour, so they
// show a representative subset of ranks and bin each rank's steps into the schedule's phases.
#include <algorithm>
#include <array>

#include "chart_axes.hpp"
#include "parallax/reports/charts.hpp"
#include "parallax/reports/svg.hpp"

namespace parallax {
namespace {

using chart::kLeft;
using chart::kTop;

struct Interval {
  double a, b;
};

double overlap(const Interval& x, double a, double b) {
  return std::max(0.0, std::min(x.b, b) - std::max(x.a, a));
}

// Sorted, merged union of intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& x, const Interval& y) { return x.a < y.a; });
  std::vector<Interval> out;
  for (const Interval& x : v) {
    if (!out.empty() && x.a <= out.back().b) {
      out.back().b = std::max(out.back().b, x.b);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// Length of [a, b) covered by `comm` and not by `busy` (both merged).
double exposed(const std::vector<Interval>& comm, const std::vector<Interval>& busy, double a, double b) {
  double total = 0;
  for (const Interval& c : comm) {
    const double ca = std::max(c.a, a), cb = std::min(c.b, b);
    if (cb <= ca) continue;
    double covered = 0;
    for (const Interval& x : busy) covered += overlap(x, ca, cb);
    total += (cb - ca) - covered;
  }
  return total;
}

struct RankOps {
  std::vector<Interval> fwd, bwd, opt, comm;
};

RankOps rank_ops(const SimResult& sim, int64_t rank) {
  RankOps r;
  for (const SimOp& op : sim.ops) {
    const Interval iv{op.start_s, op.start_s + op.duration_s};
    if (op.stream == SimStream::compute && op.rank == rank) {
      if (op.kind == SimOpKind::forward) r.fwd.push_back(iv);
      if (op.kind == SimOpKind::backward) r.bwd.push_back(iv);
      if (op.kind == SimOpKind::optimizer) r.opt.push_back(iv);
    } else if (op.stream != SimStream::compute && (op.rank == rank || op.peer == rank)) {
      r.comm.push_back(iv);
    }
  }
  return r;
}

int64_t steps_per_rank(const SimResult& sim) {
  int64_t n = 0;
  for (const SimOp& op : sim.ops) {
    n += op.stream == SimStream::compute && op.rank == 0 &&
         (op.kind == SimOpKind::forward || op.kind == SimOpKind::backward);
  }
  return n / 2;  // forward steps (one per micro-batch and chunk)
}

const char* kBubble = "#d9d9d9";

// One rank's phases: [start, end) with its name.
struct PipelinePhase {
  const char* name;
  double a, b;
};

std::vector<PipelinePhase> phases(const RankOps& r) {
  if (r.fwd.empty() || r.bwd.empty()) return {};
  double first_f = 1e300, first_b = 1e300, last_f = 0, last_b = 0;
  for (const Interval& x : r.fwd) first_f = std::min(first_f, x.a), last_f = std::max(last_f, x.b);
  for (const Interval& x : r.bwd) first_b = std::min(first_b, x.a), last_b = std::max(last_b, x.b);
  const double opt = r.opt.empty() ? last_b : r.opt.front().a;
  const std::array<PipelinePhase, 5> all = {{{"fill", 0, first_f},
                                     {"warm-up", first_f, first_b},
                                     {"steady 1F1B", first_b, std::max(first_b, last_f)},
                                     {"cool-down", std::max(first_b, last_f), last_b},
                                     {"gradient sync", last_b, opt}}};
  std::vector<PipelinePhase> out;
  for (const PipelinePhase& p : all) {
    if (p.b > p.a) out.push_back(p);
  }
  return out;
}

// A phase's bar: its height split by the share of forward, backward, exposed communication and
// bubble over the phase's time span.
std::string phase_bar(const RankOps& r, const std::vector<Interval>& busy, const std::vector<Interval>& comm,
                      int64_t rank, const PipelinePhase& p, double x, double y, double bw, double bh) {
  double f = 0, b = 0;
  for (const Interval& i : r.fwd) f += overlap(i, p.a, p.b);
  for (const Interval& i : r.bwd) b += overlap(i, p.a, p.b);
  double busy_s = 0;
  for (const Interval& i : busy) busy_s += overlap(i, p.a, p.b);
  const double len = p.b - p.a;
  const double c = exposed(comm, busy, p.a, p.b);
  const double bubble = std::max(0.0, len - busy_s - c);
  const std::array<std::pair<const char*, double>, 4> parts = {
      {{"forward", f}, {"backward", b}, {"communication", c}, {"bubble", bubble}}};
  const std::array<std::string, 4> fills = {svg::color(0), svg::color(1), svg::color(3), kBubble};
  std::string s;
  double yy = y;
  for (size_t k = 0; k < parts.size(); ++k) {
    const double share = parts[k].second / len;
    if (share <= 0) continue;
    s += svg::rect(x, yy, bw, share * bh, fills[k],
                   "rank " + std::to_string(rank) + " " + p.name + " (" + svg::number(p.a, 3) + "-" +
                       svg::number(p.b, 3) + " s): " + parts[k].first + " " +
                       svg::number(parts[k].second, 3) + " s, " + svg::number(share * 100, 1) + "%");
    yy += share * bh;
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
  const int64_t steps = steps_per_rank(sim);
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
    const RankOps ops = rank_ops(sim, r);
    std::vector<Interval> busy = ops.fwd;
    busy.insert(busy.end(), ops.bwd.begin(), ops.bwd.end());
    busy.insert(busy.end(), ops.opt.begin(), ops.opt.end());
    busy = merged(busy);
    auto xpos = [&](double t) { return kLeft + t / vmax * w; };
    if (binned) {
      const std::vector<Interval> comm = merged(ops.comm);
      for (const PipelinePhase& p : phases(ops)) {
        const double x = xpos(p.a), bw = std::max(0.5, (p.b - p.a) / vmax * w);
        s += phase_bar(ops, busy, comm, r, p, x, y + 12, bw, row - 14);
        if (bw > 6.0 * static_cast<double>(std::string(p.name).size())) {
          s += svg::text(x + bw / 2, y + 10, p.name, 9, "middle", "class=\"phase\"");
        }
      }
    } else {
      const double end = ops.opt.empty() ? sim.iteration_time_s : ops.opt.front().a;
      s += svg::rect(xpos(0), y + 1, end / vmax * w, row - 2, kBubble);
      auto draw = [&](const std::vector<Interval>& v, int color, const char* name) {
        int64_t k = 0;
        for (const Interval& iv : v) {
          const double bw = std::max(0.5, (iv.b - iv.a) / vmax * w);
          s += svg::rect(xpos(iv.a), y + 1, bw, row - 2, svg::color(color),
                         "rank " + std::to_string(r) + " " + name + " " + std::to_string(k++) + ": " +
                             svg::number(iv.a, 3) + " s + " + svg::number((iv.b - iv.a) * 1e3, 1) + " ms");
        }
      };
      draw(ops.fwd, 0, "forward");
      draw(ops.bwd, 1, "backward");
      draw(ops.opt, 2, "optimizer");
    }
    if (binned) {
      for (const Interval& iv : ops.opt) {
        s += svg::rect(xpos(iv.a), y + 12, std::max(0.5, (iv.b - iv.a) / vmax * w), row - 14, svg::color(2),
                       "rank " + std::to_string(r) + " optimizer: " + svg::number((iv.b - iv.a) * 1e3, 1) + " ms");
      }
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
