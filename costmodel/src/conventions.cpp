#include "parallax/costmodel/conventions.hpp"

#include "parallax/costmodel/memory.hpp"

namespace parallax {
namespace {

struct Shape {
  double B, s, L, h, V;
};

Shape shape(const ModelSpec& m, int64_t global_batch) {
  return {static_cast<double>(global_batch), static_cast<double>(m.seq_len),
          static_cast<double>(m.layers), static_cast<double>(m.hidden),
          static_cast<double>(m.vocab)};
}

}  // namespace

double model_flops_closed_form(const ModelSpec& m, int64_t global_batch) {
  const Shape x = shape(m, global_batch);
  return 72 * x.B * x.s * x.L * x.h * x.h *
         (1 + x.s / (6 * x.h) + x.V / (12 * x.L * x.h));
}

double megatron_flops_closed_form(const ModelSpec& m, int64_t global_batch) {
  const Shape x = shape(m, global_batch);
  return 96 * x.B * x.s * x.L * x.h * x.h *
         (1 + x.s / (6 * x.h) + x.V / (16 * x.L * x.h));
}

double model_params(const ModelSpec& m) {
  // Every layer once (tp = 1 shards nothing), the word embeddings, learned positions, the untied
  // output layer and the final norm.
  const double h = static_cast<double>(m.hidden);
  const double vocab = static_cast<double>(m.vocab) * h;
  const double positions = m.position == Position::learned ? static_cast<double>(m.seq_len) * h : 0;
  const double output = m.tied_embeddings ? 0 : vocab;
  const double final_norm = m.norm == Norm::layernorm ? 2 * h : h;
  return static_cast<double>(m.layers) * layer_params_per_rank(m, 1) + vocab + positions + output +
         final_norm;
}

double layer_boundary_activation_bytes(const ModelSpec& m, int64_t batch) {
  return static_cast<double>(batch) * static_cast<double>(m.layers) *
         static_cast<double>(m.seq_len) * static_cast<double>(m.hidden) * 2;
}

}  // namespace parallax
