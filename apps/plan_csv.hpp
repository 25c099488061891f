#pragma once
// Every candidate of a search as CSV (plan --csv), as Calculon and NeMo's auto-configurator users
// expect: one row per plan considered, ranked, out of memory or rejected by a rule, with why.
#include <string>

#include "parallax/planner/planner.hpp"

namespace parallax::cli {

// Needs a search run with SearchOptions::record_candidates. Columns: status (ranked | memory |
// rule), rank (1 = winner; empty unless ranked), the plan's fields, reason (the rule's name, or
// fits-in-memory), iteration_time_s, tokens_per_s, mfu, peak_memory_gb (empty for rule rejections).
std::string candidates_csv(const SearchResult& res);

}  // namespace parallax::cli
