#pragma once
// Plans and failed searches as the one-line text every front end (CLI, GUI) shows.
#include <cstdint>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax {

// "tp=8 pp=35 dp=8 mbs=1 m=240 schedule=1f1b recompute=full zero=0 order=tp-dp-pp"
std::string plan_line(const PlanSpec& p);

// Why a search of `gpus` GPUs has no plan: the admitted plan nearest to fitting and what it needs,
// or the rules that rejected every candidate. An InputError on --gpus, as `parallax plan` exits.
InputError no_plan_error(const SearchResult& res, int64_t gpus);

}  // namespace parallax
