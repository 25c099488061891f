#include "parallax/reports/pipeline_phases.hpp"

#include <algorithm>
#include <array>

namespace parallax {
namespace {

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



}  // namespace

std::vector<std::pair<double, double>> optimizer_steps(const SimResult& sim, int64_t rank) {
  std::vector<std::pair<double, double>> out;
  for (const SimOp& op : sim.ops) {
    if (op.stream == SimStream::compute && op.rank == rank && op.kind == SimOpKind::optimizer) {
      out.emplace_back(op.start_s, op.start_s + op.duration_s);
    }
  }
  return out;
}

int64_t pipeline_steps_per_rank(const SimResult& sim) {
  int64_t n = 0;
  for (const SimOp& op : sim.ops) {
    n += op.stream == SimStream::compute && op.rank == 0 && op.kind == SimOpKind::forward;
  }
  return n;
}

std::vector<PipelinePhase> pipeline_phases(const SimResult& sim, int64_t rank) {
  const RankOps r = rank_ops(sim, rank);
  if (r.fwd.empty() || r.bwd.empty()) return {};
  double first_f = 1e300, first_b = 1e300, last_f = 0, last_b = 0;
  for (const Interval& x : r.fwd) first_f = std::min(first_f, x.a), last_f = std::max(last_f, x.b);
  for (const Interval& x : r.bwd) first_b = std::min(first_b, x.a), last_b = std::max(last_b, x.b);
  const double opt = r.opt.empty() ? last_b : r.opt.front().a;
  const double steady_end = std::max(first_b, last_f);
  const std::array<PipelinePhase, 5> all = {{{"fill", 0, first_f},
                                             {"warm-up", first_f, first_b},
                                             {"steady 1F1B", first_b, steady_end},
                                             {"cool-down", steady_end, last_b},
                                             {"gradient sync", last_b, opt}}};
  std::vector<Interval> busy = r.fwd;
  busy.insert(busy.end(), r.bwd.begin(), r.bwd.end());
  busy.insert(busy.end(), r.opt.begin(), r.opt.end());
  busy = merged(busy);
  const std::vector<Interval> comm = merged(r.comm);
  std::vector<PipelinePhase> out;
  for (PipelinePhase p : all) {
    if (!(p.end_s > p.start_s)) continue;
    for (const Interval& i : r.fwd) p.forward_s += overlap(i, p.start_s, p.end_s);
    for (const Interval& i : r.bwd) p.backward_s += overlap(i, p.start_s, p.end_s);
    double busy_s = 0;
    for (const Interval& i : busy) busy_s += overlap(i, p.start_s, p.end_s);
    p.comm_s = exposed(comm, busy, p.start_s, p.end_s);
    p.bubble_s = std::max(0.0, p.end_s - p.start_s - busy_s - p.comm_s);
    out.push_back(p);
  }
  return out;
}

}  // namespace parallax
