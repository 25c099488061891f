#pragma once
// The model / cluster / job / plan flags as CLI11 options (search_flags.hpp: the search flags). The
// option structs and their resolution into validated specs are parallax::inputs', shared with the
// GUI. No planner header comes in here: predict and simulate do not plan.
#include <CLI/CLI.hpp>

#include <set>
#include <string>

#include "parallax/inputs/job_flags.hpp"

namespace parallax::cli {

// All flags (job + parallel settings), as predict and simulate take them.
void add_plan_options(CLI::App& app, PlanOptions& o);
// Only the model / cluster / GPUs / job / profile flags, as plan and capacity take them.
void add_job_options(CLI::App& app, PlanOptions& o, bool with_gpus = true);
// The recipe keys (parallax/inputs/recipe.hpp) of the options typed on the command line, which win
// over a recipe's or search file's values.
std::set<std::string> typed_recipe_keys(const CLI::App& app);

}  // namespace parallax::cli
