// Pipeline schedule tables, following Megatron-LM's megatron/core/pipeline_parallel/schedules.py:
//  - 1F1B (forward_backward_pipelining_without_interleaving): rank r runs min(pp - r - 1, m)
//    warm-up forwards, then alternates one forward and one backward, then drains the backwards.
//  - Interleaved 1F1B (forward_backward_pipelining_with_interleaving): m * vpp virtual
//    micro-batches; warm-up (pp - r - 1) * 2 + (vpp - 1) * N (all of them when m == pp), N the
//    micro-batch group size (pp by default). Virtual micro-batch k is entry k of get_schedule_table:
//    the micro-batches in groups of N, each group run through chunks 0 .. vpp-1 (the last group
//    takes the remainder); forward runs its chunk, backward chunk vpp - 1 - chunk. With N = pp that
//    is chunk (k / pp) % vpp on micro-batch (k / (pp * vpp)) * pp + k % pp.
//  - GPipe: every forward, then every backward, both in micro-batch order.
#include "parallax/core/schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "parallax/core/error.hpp"
#include "int_text.hpp"

namespace parallax {
namespace {

using detail::n;

void check_inputs(Schedule s, int64_t pp, int64_t vpp, int64_t m, int64_t group) {
  const auto fail = [](const std::string& path, const std::string& rule) {
    throw InputError("schedule", path, rule);
  };
  if (pp < 1) fail("$.plan.pp", "must be >= 1 (got " + n(pp) + ")");
  if (vpp < 1) fail("$.plan.vpp", "must be >= 1 (got " + n(vpp) + ")");
  if (m < 1) fail("$.plan.num_micro_batches", "must be >= 1 (got " + n(m) + ")");
  if (s == Schedule::interleaved) {
    if (vpp < 2) fail("$.plan.vpp", "schedule \"interleaved\" requires vpp > 1 (got vpp 1)");
    if (pp < 2)
      fail("$.plan.pp", "schedule \"interleaved\" requires pp >= 2 (got pp " + n(pp) + ")");
    if (group == 0 && m % pp != 0) {
      fail("$.plan.num_micro_batches", "num_micro_batches (" + n(m) +
                                           ") must be a multiple of pp (" + n(pp) +
                                           ") with the interleaved schedule (Megatron-LM), or "
                                           "run in micro-batch groups (microbatch_group)");
    }
    if (group != 0) {
      const std::string rule = microbatch_group_refusal(pp, m, group);
      if (!rule.empty()) fail("$.plan.microbatch_group", rule);
    }
  } else if (vpp != 1) {
    fail("$.plan.vpp", "vpp (" + n(vpp) + ") > 1 requires schedule \"interleaved\" (got \"" +
                           to_string(s) + "\")");
  } else if (group != 0) {
    fail("$.plan.microbatch_group", "a micro-batch group needs schedule \"interleaved\" (got \"" +
                                        std::string(to_string(s)) + "\")");
  }
}

std::vector<ScheduleStep> one_f_one_b_rank(int64_t pp, int64_t m, int64_t r) {
  std::vector<ScheduleStep> out;
  const int64_t warmup = std::min(pp - r - 1, m);
  for (int64_t i = 0; i < warmup; ++i) out.push_back({StepKind::forward, i, 0});
  for (int64_t i = 0; i < m - warmup; ++i) {
    out.push_back({StepKind::forward, warmup + i, 0});
    out.push_back({StepKind::backward, i, 0});
  }
  for (int64_t i = m - warmup; i < m; ++i) out.push_back({StepKind::backward, i, 0});
  return out;
}

std::vector<ScheduleStep> gpipe_rank(int64_t m) {
  std::vector<ScheduleStep> out;
  for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::forward, i, 0});
  for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::backward, i, 0});
  return out;
}

// Megatron-Core's get_schedule_table: (micro-batch, chunk) of each forward virtual micro-batch.
std::vector<ScheduleStep> interleaved_table(int64_t vpp, int64_t m, int64_t group) {
  std::vector<ScheduleStep> out;
  for (int64_t first = 0; first < m; first += group) {
    const int64_t end = first + group >= m ? m : first + group;
    for (int64_t chunk = 0; chunk < vpp; ++chunk)
      for (int64_t mb = first; mb < end; ++mb) out.push_back({StepKind::forward, mb, chunk});
  }
  return out;
}

std::vector<ScheduleStep> interleaved_rank(int64_t pp, int64_t vpp, int64_t m, int64_t group,
                                           int64_t r) {
  const std::vector<ScheduleStep> table = interleaved_table(vpp, m, group);
  const auto forward = [&](int64_t k) { return table[static_cast<size_t>(k)]; };
  const auto backward = [&](int64_t k) {
    const ScheduleStep& s = table[static_cast<size_t>(k)];
    return ScheduleStep{StepKind::backward, s.micro_batch, vpp - 1 - s.chunk};
  };
  const int64_t total = m * vpp;
  const int64_t warmup = m == pp ? total : std::min((pp - r - 1) * 2 + (vpp - 1) * group, total);
  std::vector<ScheduleStep> out;
  for (int64_t k = 0; k < warmup; ++k) out.push_back(forward(k));
  for (int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(forward(warmup + k));
    out.push_back(backward(k));
  }
  for (int64_t k = total - warmup; k < total; ++k) out.push_back(backward(k));
  return out;
}

std::string step_text(const ScheduleStep& s, bool chunks) {
  // Appended piece by piece here and in format_schedule: GCC 12 reports a false -Wrestrict on
  // "literal" + std::string&& once inlined.
  std::string out(1, s.kind == StepKind::forward ? 'F' : 'B');
  out += n(s.micro_batch);
  if (chunks) {
    out += '.';
    out += n(s.chunk);
  }
  return out;
}

bool group_runs(int64_t pp, int64_t m, int64_t group) {
  return group >= pp && group <= m && (m % group == 0 || m % group >= pp);
}

}  // namespace

std::string microbatch_group_refusal(int64_t pp, int64_t m, int64_t group) {
  if (group_runs(pp, m, group)) return {};
  if (group < pp || group > m)
    return "microbatch_group (" + n(group) + ") must lie in [pp, num_micro_batches] = [" + n(pp) +
           ", " + n(m) + "] (Megatron-Core)";
  return "num_micro_batches (" + n(m) + ") % microbatch_group (" + n(group) + ") = " +
         n(m % group) + " leaves a last group smaller than pp (" + n(pp) +
         "); it must be 0 or >= pp (Megatron-Core)";
}

int64_t smallest_microbatch_group(int64_t pp, int64_t m) {
  for (int64_t g = pp; g <= m; ++g)
    if (group_runs(pp, m, g)) return g;
  return 0;
}

ScheduleTable make_schedule(Schedule s, int64_t pp, int64_t vpp, int64_t num_micro_batches,
                            int64_t microbatch_group) {
  check_inputs(s, pp, vpp, num_micro_batches, microbatch_group);
  ScheduleTable t;
  t.schedule = s;
  t.pp = pp;
  t.vpp = vpp;
  t.num_micro_batches = num_micro_batches;
  t.microbatch_group = microbatch_group > 0 ? microbatch_group : pp;
  for (int64_t r = 0; r < pp; ++r) {
    switch (s) {
      case Schedule::gpipe:
        t.ranks.push_back(gpipe_rank(num_micro_batches));
        break;
      case Schedule::one_f_one_b:
        t.ranks.push_back(one_f_one_b_rank(pp, num_micro_batches, r));
        break;
      case Schedule::interleaved:
        t.ranks.push_back(interleaved_rank(pp, vpp, num_micro_batches, t.microbatch_group, r));
        break;
    }
  }
  return t;
}

std::string format_schedule(const ScheduleTable& t) {
  std::string out;
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    out += "rank ";
    out += std::to_string(r);
    out += ':';
    for (const ScheduleStep& s : t.ranks[r]) {
      out += ' ';
      out += step_text(s, t.vpp > 1);
    }
    out += "\n";
  }
  return out;
}

void check_schedule(const ScheduleTable& t) {
  const auto fail = [](const std::string& what) { throw std::logic_error("schedule: " + what); };
  const int64_t pp = t.pp, vpp = t.vpp, m = t.num_micro_batches;
  if (pp < 1 || vpp < 1 || m < 1) fail("pp, vpp and num_micro_batches must be >= 1");
  if (static_cast<int64_t>(t.ranks.size()) != pp)
    fail("table has " + n(static_cast<int64_t>(t.ranks.size())) + " ranks, pp is " + n(pp));
  const int64_t stages = pp * vpp;
  // done[kind][stage * m + mb]
  std::vector<char> done_f(static_cast<size_t>(stages * m), 0), done_b(done_f.size(), 0);
  const auto idx = [m](int64_t stage, int64_t mb) { return static_cast<size_t>(stage * m + mb); };
  // Per rank: each (mb, chunk) once as F and once as B, F first.
  for (int64_t r = 0; r < pp; ++r) {
    std::vector<char> seen_f(static_cast<size_t>(vpp * m), 0), seen_b(seen_f.size(), 0);
    const auto& steps = t.ranks[static_cast<size_t>(r)];
    if (static_cast<int64_t>(steps.size()) != 2 * vpp * m) {
      fail("rank " + n(r) + " has " + n(static_cast<int64_t>(steps.size())) + " steps, expected " +
           n(2 * vpp * m));
    }
    for (const ScheduleStep& s : steps) {
      if (s.micro_batch < 0 || s.micro_batch >= m || s.chunk < 0 || s.chunk >= vpp) {
        fail("rank " + n(r) + " step " + step_text(s, true) + " is out of range");
      }
      const size_t k = static_cast<size_t>(s.chunk * m + s.micro_batch);
      if (s.kind == StepKind::forward) {
        if (seen_f[k]) fail("rank " + n(r) + " runs " + step_text(s, true) + " twice");
        seen_f[k] = 1;
      } else {
        if (seen_b[k]) fail("rank " + n(r) + " runs " + step_text(s, true) + " twice");
        if (!seen_f[k])
          fail("rank " + n(r) + " runs " + step_text(s, true) + " before its forward");
        seen_b[k] = 1;
      }
    }
  }
  // Play the table: a rank advances when its next step's cross-rank dependency is met.
  std::vector<size_t> next(static_cast<size_t>(pp), 0);
  int64_t remaining = 2 * vpp * m * pp;
  while (remaining > 0) {
    bool progress = false;
    for (int64_t r = 0; r < pp; ++r) {
      const auto& steps = t.ranks[static_cast<size_t>(r)];
      size_t& i = next[static_cast<size_t>(r)];
      while (i < steps.size()) {
        const ScheduleStep& s = steps[i];
        const int64_t v = virtual_stage(pp, r, s.chunk);
        if (s.kind == StepKind::forward) {
          if (v > 0 && !done_f[idx(v - 1, s.micro_batch)]) break;
          done_f[idx(v, s.micro_batch)] = 1;
        } else {
          if (v + 1 < stages && !done_b[idx(v + 1, s.micro_batch)]) break;
          done_b[idx(v, s.micro_batch)] = 1;
        }
        ++i;
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      std::string where;
      for (int64_t r = 0; r < pp; ++r) {
        const auto& steps = t.ranks[static_cast<size_t>(r)];
        const size_t i = next[static_cast<size_t>(r)];
        if (i < steps.size()) {
          where = "rank " + n(r) + " waits forever at step " + n(static_cast<int64_t>(i)) + " (" +
                  step_text(steps[i], true) + ")";
          break;
        }
      }
      fail("deadlock: " + where);
    }
  }
}

}  // namespace parallax
