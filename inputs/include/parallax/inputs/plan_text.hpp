#pragma once
// A plan as the one-line text every front end (CLI, GUI) shows.
#include <string>

#include "parallax/core/plan_spec.hpp"

namespace parallax {

// "tp=8 pp=35 dp=8 mbs=1 m=240 schedule=1f1b recompute=full zero=0 order=tp-dp-pp"
std::string plan_line(const PlanSpec& p);

}  // namespace parallax
