#pragma once
// The model / cluster / job / plan / search flags as CLI11 options. The option structs and their
// resolution into validated specs are parallax::inputs' (job_flags.hpp, search_flags.hpp), shared
// with the GUI.
#include <CLI/CLI.hpp>

#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/search_flags.hpp"

namespace parallax::cli {

// All flags (job + parallel settings), as predict and simulate take them.
void add_plan_options(CLI::App& app, PlanOptions& o);
// Only the model / cluster / GPUs / job / profile flags, as plan and capacity take them.
void add_job_options(CLI::App& app, PlanOptions& o, bool with_gpus = true);
// Search-space restrictions shared by plan, capacity and report.
void add_search_flags(CLI::App& app, SearchFlags& f);

}  // namespace parallax::cli
