#pragma once
// The planner's refiner backed by the event simulator: a candidate's iteration time played event by
// event over its schedule table (same costs as the analytic model, faithful arrangement).
#include "parallax/planner/planner.hpp"

namespace parallax {

// Simulates each plan from its prediction's costs and memory (Prediction::costs), computed once by
// the search on its topology; `in` must outlive the refiner.
Refiner simulator_refiner(const PlannerInputs& in);

}  // namespace parallax
