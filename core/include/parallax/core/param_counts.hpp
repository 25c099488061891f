#pragma once
// Parameter counts of a model: every parameter once (total), and those one token's forward pass
// goes through (active). A dense model's are equal; a mixture of experts' active count takes, in
// each MoE layer, the router, the shared experts and top_k of the routed experts instead of all.
// Counts are of the model as specified: no vocabulary padding, no tensor-parallel copies.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "parallax/core/model_spec.hpp"

namespace parallax {

struct ParamCounts {
  double total = 0;
  double active = 0;  // per token
};

// One FFN of width `width` (a dense layer's MLP or one expert): the input projection(s) (two with
// SwiGLU: gate and up), the output projection, and their biases with linear_bias.
double ffn_params(const ModelSpec& m, int64_t width);
// One layer's attention: Q, K, V (grouped-query: kv_heads key/value heads) and output
// projections, with their biases.
double attention_params(const ModelSpec& m);
// One MoE layer's router: a bias-free linear from hidden to num_experts logits.
double router_params(const ModelSpec& m);

ParamCounts param_counts(const ModelSpec& m);

// {"total": N, "active": N}: what `parallax presets show` adds to a model. A model file may carry
// it back in: read_model then requires it to equal the counts of the shape beside it.
nlohmann::json param_counts_json(const ModelSpec& m);

}  // namespace parallax
