#include "parallax/costmodel/conventions.hpp"

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
  const double h = static_cast<double>(m.hidden);
  const double d = static_cast<double>(m.head_dim());
  const double qkv_out = static_cast<double>(m.heads + 2 * m.kv_heads) * d;
  const double f = static_cast<double>(m.ffn_hidden);
  const double fc1_out = m.activation == Activation::swiglu ? 2 * f : f;
  const double norm = m.norm == Norm::layernorm ? 2 * h : h;
  // Weights and biases of QKV, projection, FC1, FC2, and two norms.
  const double layer = h * qkv_out + qkv_out + h * h + h + h * fc1_out + fc1_out + f * h + h +
                       2 * norm;
  const double vocab = static_cast<double>(m.vocab) * h;
  const double positions = m.position == Position::learned ? static_cast<double>(m.seq_len) * h : 0;
  const double output = m.tied_embeddings ? 0 : vocab;
  return static_cast<double>(m.layers) * layer + vocab + positions + output + norm;
}

double layer_boundary_activation_bytes(const ModelSpec& m, int64_t batch) {
  return static_cast<double>(batch) * static_cast<double>(m.layers) *
         static_cast<double>(m.seq_len) * static_cast<double>(m.hidden) * 2;
}

}  // namespace parallax
