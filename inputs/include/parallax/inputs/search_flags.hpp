#pragma once
// The search-space flags (plan, capacity, report; the GUI's constraints), and the one conversion
// from a resolved job and those flags to the planner's inputs, which every front end uses.
#include <cstdint>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax {

struct SearchFlags {
  std::string recompute_allowed = "none,selective,full";
  bool no_sp = false;
  bool allow_cross_node_tp = false;
  bool allow_all = false;
  bool uneven_pp = false;
  std::string force_tp;  // empty = search every tp
  std::string force_pp;  // empty = search every pp
  std::string force_cp;  // empty = search every cp that cuts the sequence
  bool operator==(const SearchFlags&) const = default;
};
SearchOptions search_options(const SearchFlags& f);

// Model, cluster, job, GPUs and profile from the job; options from the flags; top_k and threads
// are the planner's defaults.
PlannerInputs planner_inputs(const ResolvedJob& job, const SearchFlags& search);

// Why a search of `gpus` GPUs has no plan: the admitted plan nearest to fitting and what it needs,
// or the rules that rejected every candidate. An InputError on --gpus, as `parallax plan` exits.
InputError no_plan_error(const SearchResult& res, int64_t gpus);

}  // namespace parallax
