#include "parallax/costmodel/conventions.hpp"

#include "parallax/core/param_counts.hpp"

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

// One count for the whole code base, core's, which knows experts (tests/costmodel checks it
// against layer_params_per_rank, the per-rank count the memory model shards).
double model_params(const ModelSpec& m) { return param_counts(m).total; }

double layer_boundary_activation_bytes(const ModelSpec& m, int64_t batch) {
  return static_cast<double>(batch) * static_cast<double>(m.layers) *
         static_cast<double>(m.seq_len) * static_cast<double>(m.hidden) * 2;
}

}  // namespace parallax
