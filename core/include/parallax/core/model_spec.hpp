#pragma once
// A GPT-style decoder: the shape the cost model, planner and executor all read.
#include <cstdint>
#include <string>

namespace parallax {

enum class Activation { gelu, swiglu };
enum class Position { learned, rope, alibi };
enum class Norm { layernorm, rmsnorm };

// Llama 3.1's scaled RoPE (Hugging Face rope_scaling with rope_type "llama3", Meta's
// apply_scaling in llama-models): of the rotary frequencies, wavelengths shorter than
// original_max_position / high_freq_factor are kept, those longer than
// original_max_position / low_freq_factor are divided by factor, and those between are blended
// linearly. factor 0 means no scaling.
struct RopeScaling {
  double factor = 0;
  double low_freq_factor = 0;
  double high_freq_factor = 0;
  int64_t original_max_position = 0;  // tokens: the context the unscaled base was trained at

  bool operator==(const RopeScaling&) const = default;
};

struct ModelSpec {
  std::string name;    // preset name or "custom"
  std::string source;  // where the numbers come from (required for presets)
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;    // GQA; equals heads for multi-head attention
  int64_t ffn_hidden = 0;  // 4*hidden for GPT-2/3 style models
  int64_t seq_len = 0;
  int64_t vocab = 0;
  Activation activation = Activation::gelu;
  Position position = Position::learned;
  // RoPE's base θ (Hugging Face rope_theta, Megatron-LM --rotary-base): 10000 in RoFormer, Llama 2
  // and Mistral 7B, 500000 in Llama 3. Meaningful only with position rope.
  double rope_base = 10000;
  RopeScaling rope_scaling;  // with position rope only
  bool tied_embeddings = true;
  Norm norm = Norm::layernorm;
  // Biases on the linear layers (GPT-2/3, BLOOM); Llama-family models have none (Megatron-LM
  // --disable-bias-linear).
  bool linear_bias = true;
  // Dropout probability after attention's softmax, each residual branch and the embedding
  // (Megatron-LM --hidden-dropout / --attention-dropout, 0.1 by default). At 0 no trainer draws
  // a mask: nothing is stored or moved for it (PyTorch's dropout returns its input at p = 0).
  double dropout = 0.1;

  bool has_dropout() const { return dropout > 0; }
  // Bytes of dropout mask stored and moved per masked element: a byte each, none without dropout.
  double dropout_mask_bytes() const { return has_dropout() ? 1 : 0; }
  int64_t head_dim() const { return hidden / heads; }
  bool has_rope_scaling() const { return rope_scaling.factor > 0; }
};

const char* to_string(Activation a);
const char* to_string(Position p);
const char* to_string(Norm n);

}  // namespace parallax
