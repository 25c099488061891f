#pragma once
// The search-space flags (plan, capacity, report) as CLI11 options; SearchFlags and its conversion
// into the planner's inputs are parallax::inputs' (search_flags.hpp).
#include <CLI/CLI.hpp>

#include "parallax/inputs/search_flags.hpp"

namespace parallax::cli {

void add_search_flags(CLI::App& app, SearchFlags& f);

}  // namespace parallax::cli
