#pragma once
// The JSON form of a prediction (`predict --json`; each planner result carries the same fields).
#include <nlohmann/json.hpp>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/predict.hpp"

namespace parallax {

nlohmann::json to_json(const Prediction& p);

// A prediction's interval on each of its figures: {"level", "iteration_time_s": [lo, hi],
// "tokens_per_s", "model_tflops_per_gpu", "mfu" (each [lo, hi]; null for an unbounded end), "rows",
// "sources", "basis", "dropped", "sources_needed"}. A time's interval is predicted x [low, high] ratio; a rate's,
// predicted / [high, low].
nlohmann::json interval_json(const PredictionInterval& iv, const Prediction& p);

}  // namespace parallax
