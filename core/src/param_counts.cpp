#include "parallax/core/param_counts.hpp"

namespace parallax {

namespace {
double d(int64_t x) { return static_cast<double>(x); }
}  // namespace

double ffn_params(const ModelSpec& m, int64_t width) {
  const double h = d(m.hidden), f = d(width);
  const double in_out = m.activation == Activation::swiglu ? 2 * f : f;  // SwiGLU: [gate | up]
  const double bias = m.linear_bias ? in_out + h : 0;
  return h * in_out + f * h + bias;
}

double attention_params(const ModelSpec& m) {
  const double h = d(m.hidden);
  const double qkv = d(m.heads + 2 * m.kv_heads) * d(m.head_dim());
  const double q_width = d(m.heads) * d(m.head_dim());
  const double bias = m.linear_bias ? qkv + h : 0;
  return h * qkv + q_width * h + bias;
}

double router_params(const ModelSpec& m) { return d(m.moe.num_experts) * d(m.hidden); }

ParamCounts param_counts(const ModelSpec& m) {
  const double h = d(m.hidden);
  const double norm = m.norm == Norm::layernorm ? 2 * h : h;
  // Attention and the two norms of every layer.
  const double common = attention_params(m) + 2 * norm;
  const double dense_layer = common + ffn_params(m, m.ffn_hidden);
  const MoeSpec& e = m.moe;
  const double shared = d(e.shared_experts) * ffn_params(m, e.shared_expert_ffn_hidden);
  const double expert = ffn_params(m, e.expert_ffn_hidden);
  const double moe_total = common + router_params(m) + shared + d(e.num_experts) * expert;
  const double moe_active = common + router_params(m) + shared + d(e.top_k) * expert;
  const double moe = d(m.moe_layers());
  const double dense = d(m.layers) - moe;
  // Word embeddings, learned positions, the untied output layer and the final norm.
  const double vocab = d(m.vocab) * h;
  const double outside = vocab + (m.position == Position::learned ? d(m.seq_len) * h : 0) +
                         (m.tied_embeddings ? 0 : vocab) + norm;
  ParamCounts c;
  c.total = dense * dense_layer + moe * moe_total + outside;
  c.active = dense * dense_layer + moe * moe_active + outside;
  return c;
}

nlohmann::json param_counts_json(const ModelSpec& m) {
  const ParamCounts c = param_counts(m);
  // Integers below 2^53, exact in a double: written as integers.
  return {{"total", static_cast<int64_t>(c.total)}, {"active", static_cast<int64_t>(c.active)}};
}

}  // namespace parallax
