// The search flags, their conversion (with a resolved job) into the planner's inputs, and the
// message of a search that found no plan.
#include "parallax/inputs/search_flags.hpp"

#include <cstdio>
#include <sstream>

#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/plan_text.hpp"

namespace parallax {
namespace {

std::string gb(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

}  // namespace

SearchOptions search_options(const SearchFlags& f) {
  SearchOptions o;
  o.recompute.clear();
  std::stringstream ss(f.recompute_allowed);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "none") o.recompute.push_back(Recompute::none);
    else if (item == "selective") o.recompute.push_back(Recompute::selective);
    else if (item == "full") o.recompute.push_back(Recompute::full);
    else {
      throw InputError("command line", "--recompute-allowed",
                       "each mode must be none, selective or full (got \"" + item + "\")");
    }
  }
  if (o.recompute.empty()) {
    throw InputError("command line", "--recompute-allowed", "needs at least one mode");
  }
  o.sequence_parallel = !f.no_sp;
  o.allow_cross_node_tp = f.allow_cross_node_tp;
  o.allow_all = f.allow_all;
  o.uneven_pp = f.uneven_pp;
  if (!f.force_tp.empty()) o.force_tp = parse_int("--force-tp", f.force_tp, 1, Limits::max_gpus);
  if (!f.force_pp.empty()) o.force_pp = parse_int("--force-pp", f.force_pp, 1, Limits::max_gpus);
  if (!f.force_cp.empty()) o.force_cp = parse_int("--force-cp", f.force_cp, 1, Limits::max_gpus);
  return o;
}

PlannerInputs planner_inputs(const ResolvedJob& job, const SearchFlags& search) {
  PlannerInputs in;
  in.model = job.model;
  in.cluster = job.cluster;
  in.whole_cluster = job.whole_cluster;
  in.job = job.job;
  in.gpus = job.gpus;
  in.profile = job.profile;
  in.options = search_options(search);
  // A model the stack cannot train at all: said once, not as every plan's rejection.
  if (const auto r = stack_model_refusal(in.model, in.job); r && !in.options.allow_all)
    throw InputError("command line", "--model", r->rule);
  return in;
}

InputError no_plan_error(const SearchResult& res, int64_t gpus) {
  std::string why;
  if (res.closest) {
    const Prediction& p = res.closest->prediction;
    why = "no admitted plan fits in memory; closest: " + plan_line(res.closest->plan) + " needs " +
          gb(p.peak_bytes + p.reserve_bytes) + " of " + gb(p.capacity_bytes);
  } else if (res.rejected_by_rule.empty()) {
    why = "no plan for " + std::to_string(gpus) +
          " GPUs is left to consider under the search restrictions (--force-tp, --force-pp, --force-cp)";
  } else {
    std::string rules;
    for (const auto& [k, v] : res.rejected_by_rule) rules += (rules.empty() ? "" : ", ") + k;
    why = "no plan for " + std::to_string(gpus) + " GPUs passes the rules (" + rules + ")";
  }
  return InputError("command line", "--gpus", why);
}

}  // namespace parallax
