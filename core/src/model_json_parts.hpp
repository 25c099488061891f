#pragma once
// The parts of a model's JSON read and written beside its shape (spec_json.cpp): the mixture of
// experts ("moe") and the stated parameter counts ("parameters").
#include <nlohmann/json.hpp>

#include "parallax/core/json_reader.hpp"
#include "parallax/core/model_spec.hpp"

namespace parallax {

// read_moe (spec_json.hpp) reads "moe".
// Every field, for an MoE model (only an MoE model's JSON has "moe").
nlohmann::json moe_to_json(const MoeSpec& e);
// "parameters", when present, must equal the counts of the shape read (param_counts.hpp).
void check_stated_parameters(JsonObjectReader& r, const ModelSpec& m);

}  // namespace parallax
