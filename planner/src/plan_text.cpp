// One-line texts about plans, shared by the CLI and the GUI (moved from apps/).
#include "parallax/planner/plan_text.hpp"

#include <cstdio>

namespace parallax {
namespace {

std::string gb(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

}  // namespace

std::string plan_line(const PlanSpec& p) {
  std::string s = "tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) +
                  " dp=" + std::to_string(p.dp);
  if (p.vpp > 1) s += " vpp=" + std::to_string(p.vpp);
  if (p.first_stage_layers > 0) s += " first=" + std::to_string(p.first_stage_layers);
  if (p.last_stage_layers > 0) s += " last=" + std::to_string(p.last_stage_layers);
  s += " mbs=" + std::to_string(p.micro_batch) + " m=" + std::to_string(p.num_micro_batches) +
       " schedule=" + to_string(p.schedule) + " recompute=" + to_string(p.recompute) +
       (p.sequence_parallel ? " sp" : "") + " zero=" + std::to_string(p.zero) +
       " order=" + p.order;
  return s;
}

InputError no_plan_error(const SearchResult& res, int64_t gpus) {
  std::string why;
  if (res.closest) {
    const Prediction& p = res.closest->prediction;
    why = "no admitted plan fits in memory; closest: " + plan_line(res.closest->plan) + " needs " +
          gb(p.peak_bytes + p.reserve_bytes) + " of " + gb(p.capacity_bytes);
  } else if (res.rejected_by_rule.empty()) {
    why = "no plan for " + std::to_string(gpus) +
          " GPUs is left to consider under the search restrictions (--force-tp, --force-pp)";
  } else {
    std::string rules;
    for (const auto& [k, v] : res.rejected_by_rule) rules += (rules.empty() ? "" : ", ") + k;
    why = "no plan for " + std::to_string(gpus) + " GPUs passes the rules (" + rules + ")";
  }
  return InputError("command line", "--gpus", why);
}

}  // namespace parallax
