#pragma once
// The parameter size table of one model stage on one tensor-parallel rank: every tensor with its
// name, family, global shape and which part of the global tensor this rank holds. The executor
// carves its flat allocations (params, grads, Adam m and v) from it; the memory model's
// per-stage parameter counts are checked against it per family (tests/executor).
//
// Layout: weights are (out, in) as in llm.c; column-parallel linears shard dim 0 (out),
// row-parallel linears shard dim 1 (in). QKV and SwiGLU's fused [a | b] are sharded per part:
// rank r holds rows [r*C/tp, (r+1)*C/tp) of q and [r*K/tp, (r+1)*K/tp) of each of k and v
// (K = kv_heads * head_dim: grouped-query attention; K = C without it), so the local tensor is
// three segments of the global one. Bias tensors exist only with linear_bias. The vocabulary is
// padded to a multiple of 128*tp (Megatron-LM).
//
// A mixture-of-experts layer (ModelSpec::is_moe_layer) has, instead of mlp.c_fc/c_proj, the router
// "h.N.mlp.router.weight" (num_experts, C), replicated; every routed expert's MLP
// "h.N.mlp.experts.E.c_fc/c_proj" of width expert_ffn_hidden and, with shared experts, one MLP
// "h.N.mlp.shared_experts.c_fc/c_proj" of width shared_experts * shared_expert_ffn_hidden, each
// sharded over tp as the dense MLP is. With expert parallelism (plan.ep > 1, the executor's
// expert_tp = tp) rank `ep_rank` of the ep group holds experts [ep_rank E/ep, (ep_rank+1) E/ep)
// only; routed experts' tensors are marked `expert` (their gradients reduce over the
// expert-data-parallel ranks, Megatron-Core's expert_data_parallel group).
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class ParamFamily { word_embedding, position_embedding, layer, final_norm, output };
const char* to_string(ParamFamily f);

enum class ParamInit { zeros, ones, normal, normal_residual };

// Part of dimension `dim` of the global tensor: global[global_start + i] = local[local_start + i].
struct ShardSegment {
  int64_t global_start = 0;
  int64_t local_start = 0;
  int64_t length = 0;
};

struct ParamTensor {
  std::string name;  // Hugging Face GPT-2 names: "wte.weight", "h.3.attn.c_attn.weight", ...
  ParamFamily family = ParamFamily::layer;
  int64_t layer = -1;  // global layer index, -1 outside the blocks
  std::vector<int64_t> global_shape;
  std::vector<int64_t> local_shape;
  int shard_dim = -1;  // -1: replicated over tensor-parallel ranks
  std::vector<ShardSegment> segments;
  ParamInit init = ParamInit::zeros;
  bool weight_decay = false;
  // Valid (unpadded) rows of a vocab-padded tensor's global dim 0 (wte, lm_head); 0 = all.
  int64_t valid_rows = 0;
  // The last stage's copy of tied word embeddings (pp > 1): kept in sync, not saved twice.
  bool tied_copy = false;
  bool expert = false;  // a routed expert's tensor (held by one ep rank)
  int64_t offset = 0;  // elements into the flat allocation
  int64_t numel() const;
};

// Vocabulary padded to a multiple of 128 * tp.
int64_t vocab_padded(int64_t vocab, int64_t tp);
// Layers of one model stage (pp * vpp stages, even split; the plan validator enforces it).
int64_t layers_per_stage(const ModelSpec& m, const PlanSpec& p);

// The tensors of model stage `stage` (0 .. pp*vpp-1) on tensor-parallel rank `tp_rank` and
// expert-parallel rank `ep_rank`, with offsets starting at `first_offset`.
std::vector<ParamTensor> stage_param_table(const ModelSpec& m, const PlanSpec& p, int64_t stage,
                                           int64_t tp_rank, int64_t first_offset = 0,
                                           int64_t ep_rank = 0);
int64_t total_numel(const std::vector<ParamTensor>& table);

}  // namespace parallax

namespace parallax {
// Flat index into the global tensor of element `local_flat` of t's local shard.
int64_t global_flat_index(const ParamTensor& t, int64_t local_flat);
// Row of the global tensor (dim 0) that element `local_flat` belongs to.
int64_t global_row(const ParamTensor& t, int64_t local_flat);
}  // namespace parallax
