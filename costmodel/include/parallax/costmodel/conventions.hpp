#pragma once
// FLOP conventions (docs/design.md §4) and the papers' memory arithmetic, as closed forms.
#include <cstdint>

#include "parallax/core/model_spec.hpp"

namespace parallax {

// Model FLOPs of one iteration (no recompute), Narayanan et al. 2021 without the recompute pass:
//   72 * B * s * L * h^2 * (1 + s/(6h) + V/(12 L h))   (GPT with 4h FFN)
double model_flops_closed_form(const ModelSpec& m, int64_t global_batch);
// Megatron-LM papers' "achieved TFLOP/s" numerator with full recompute (their Eq. 3):
//   96 * B * s * L * h^2 * (1 + s/(6h) + V/(16 L h))
double megatron_flops_closed_form(const ModelSpec& m, int64_t global_batch);

// Parameter count of the whole model (no padding): layers, embeddings (+ untied output), norms;
// with experts, every expert (param_counts(m).total).
double model_params(const ModelSpec& m);
// Stored layer-boundary activations: batch * layers * seq * hidden * 2 bytes (MT-NLG paper §2.1).
double layer_boundary_activation_bytes(const ModelSpec& m, int64_t batch);

}  // namespace parallax
