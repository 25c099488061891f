#pragma once
// A GPT-style decoder: the shape the cost model, planner and executor all read.
#include <cstdint>
#include <string>

namespace parallax {

enum class Activation { gelu, swiglu };
enum class Position { learned, rope, alibi };
enum class Norm { layernorm, rmsnorm };

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
};

const char* to_string(Activation a);
const char* to_string(Position p);
const char* to_string(Norm n);

}  // namespace parallax
