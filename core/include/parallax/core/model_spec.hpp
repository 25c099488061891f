#pragma once
// A GPT-style decoder: the shape the cost model, planner and executor all read.
#include <cstdint>
#include <string>

namespace parallax {

enum class Activation { gelu, swiglu };
enum class Position { learned, rope, alibi };
enum class Norm { layernorm, rmsnorm };
// How a mixture-of-experts router turns its logits into expert scores (Megatron-Core
// --moe-router-score-function): softmax (Mixtral, Qwen MoE) or sigmoid (DeepSeek-V3).
enum class Router { softmax, sigmoid };

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

// Mixture of experts: the FFN of an MoE layer is `num_experts` routed experts, of which each token
// passes through `top_k`, beside `shared_experts` that every token passes through. Every expert is
// an FFN of the model's activation (SwiGLU: gate, up and down projections), without the dense
// FFN's width. num_experts 0 is a dense model, and then every other field keeps its default.
// Names of the same fields elsewhere: Megatron-Core flags / Hugging Face config keys.
struct MoeSpec {
  int64_t num_experts = 0;        // --num-experts / num_local_experts, n_routed_experts, num_experts
  int64_t top_k = 0;              // --moe-router-topk / num_experts_per_tok
  int64_t expert_ffn_hidden = 0;  // --moe-ffn-hidden-size / moe_intermediate_size (Mixtral: intermediate_size)
  // Experts every token passes through, each of width shared_expert_ffn_hidden. Megatron-Core's
  // --moe-shared-expert-intermediate-size is their sum, shared_experts * shared_expert_ffn_hidden;
  // DeepSeek-V3's n_shared_experts and moe_intermediate_size; Qwen MoE's one shared expert of
  // shared_expert_intermediate_size.
  int64_t shared_experts = 0;
  int64_t shared_expert_ffn_hidden = 0;
  // Which layers are MoE: layer l (0-based) is when l >= first_k_dense and l % layer_freq == 0, as
  // Hugging Face's DeepSeek-V3 (first_k_dense_replace, moe_layer_freq) and Megatron-Core's integer
  // --moe-layer-freq (its list form, e.g. "([0]*3+[1]*58)", spells first_k_dense).
  int64_t layer_freq = 1;
  int64_t first_k_dense = 0;
  Router router = Router::softmax;  // --moe-router-score-function / scoring_func
  // Weight of the load-balancing loss (--moe-aux-loss-coeff / router_aux_loss_coef); 0: none.
  double aux_loss_coeff = 0;
  // Tokens an expert takes per batch, as a multiple of its even share top_k * tokens / num_experts;
  // the rest are dropped (--moe-expert-capacity-factor). 0: dropless, Megatron-Core's default.
  double capacity_factor = 0;

  bool operator==(const MoeSpec&) const = default;
};

struct ModelSpec {
  std::string name;    // preset name or "custom"
  std::string source;  // where the numbers come from (required for presets)
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;    // GQA; equals heads for multi-head attention
  // Width of one attention head when it is not hidden / heads (Megatron-LM --kv-channels, Hugging
  // Face head_dim): Qwen3 runs 32 heads of 128 on hidden 2048. 0: hidden / heads.
  int64_t kv_channels = 0;
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
  MoeSpec moe;  // num_experts 0: a dense model

  bool has_dropout() const { return dropout > 0; }
  // Bytes of dropout mask stored and moved per masked element: a byte each, none without dropout.
  double dropout_mask_bytes() const { return has_dropout() ? 1 : 0; }
  int64_t head_dim() const { return kv_channels > 0 ? kv_channels : hidden / heads; }
  // Key/value heads: kv_heads, or heads when it is unset (0; a spec built in code, multi-head).
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  // Whether the heads are wider or narrower than hidden / heads (kv_channels stated and different).
  bool decoupled_head_dim() const { return kv_channels > 0 && kv_channels * heads != hidden; }
  // A stated head width (hidden and heads already set): hidden / heads is the default and is kept
  // as 0, so a spec reads back equal whether its source stated the default or not.
  void set_head_dim(int64_t d) { kv_channels = d * heads == hidden ? 0 : d; }
  bool has_rope_scaling() const { return rope_scaling.factor > 0; }
  bool is_moe() const { return moe.num_experts > 0; }
  // Whether layer l (0-based) has the MoE FFN (MoeSpec's rule); never in a dense model.
  bool is_moe_layer(int64_t l) const {
    return is_moe() && l >= moe.first_k_dense && l % moe.layer_freq == 0;
  }
  int64_t moe_layers() const {
    int64_t n = 0;
    for (int64_t l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
    return n;
  }
};

const char* to_string(Activation a);
const char* to_string(Position p);
const char* to_string(Norm n);
const char* to_string(Router r);

}  // namespace parallax
