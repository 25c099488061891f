#pragma once
// Everything the what-if window asks, as the text of its fields, and a session file holding it.
// The text is resolved by the same functions as the CLI's flags (parallax/inputs/),
// so a bad field gets the CLI's message; the session stores the text as typed, so opening a saved
// session restores even a field that was invalid when it was saved.
#include <string>

#include <nlohmann/json.hpp>

#include "custom_model.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax::gui {

inline constexpr int kSessionVersion = 1;

struct WhatIfInputs {
  // model, cluster, gpus, global_batch, tokens, price, profile, dtype, bytes_per_param, framework
  // (the parallel-settings members are predict's and unused here).
  PlanOptions job;
  // recompute_allowed, no_sp, allow_cross_node_tp, allow_all, uneven_pp, force_tp, force_pp.
  SearchFlags search;
  bool custom_shape = false;  // the model is job.model with `shape` replacing its numbers
  ModelShapeFields shape;
  bool operator==(const WhatIfInputs&) const = default;
};

// The planner's question; throws InputError as `parallax plan` would for the same flags.
PlannerInputs planner_inputs(const WhatIfInputs& w);

// {"parallax_gui_session": 1, "model": ..., "shape": {...}, ...}: every field, as text.
nlohmann::json session_json(const WhatIfInputs& w);
// Strict: unknown keys, wrong types and a missing field are InputErrors naming `source` and the path.
WhatIfInputs read_session(const nlohmann::json& j, const std::string& source);

}  // namespace parallax::gui
