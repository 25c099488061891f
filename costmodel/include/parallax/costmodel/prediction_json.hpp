#pragma once
// The JSON form of a prediction (`predict --json`; each planner result carries the same fields).
#include <nlohmann/json.hpp>

#include "parallax/costmodel/predict.hpp"

namespace parallax {

nlohmann::json to_json(const Prediction& p);

}  // namespace parallax
