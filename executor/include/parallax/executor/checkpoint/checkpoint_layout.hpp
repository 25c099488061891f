#pragma once
// How checkpoints name and lay out the executor's tensors (issue 26).
//
// GPT-2 family: Hugging Face GPT-2 names, the executor's own ("wte.weight", "h.3.attn.c_attn.weight"),
// Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) stored (in, out).
//
// Llama family (hf_llama_layout): Hugging Face Llama names, every weight (out, in) as the executor
// holds it, the fused tensors split into their parts:
//   wte.weight               -> model.embed_tokens.weight        (vocabulary padding kept)
//   h.N.ln_1.*               -> model.layers.N.input_layernorm.*
//   h.N.attn.c_attn.*        -> model.layers.N.self_attn.{q,k,v}_proj.*  (rows q | k | v)
//   h.N.attn.c_proj.*        -> model.layers.N.self_attn.o_proj.*
//   h.N.ln_2.*               -> model.layers.N.post_attention_layernorm.*
//   h.N.mlp.c_fc.*           -> model.layers.N.mlp.{gate,up}_proj.*     (SwiGLU rows gate | up;
//                                                                       a GeLU MLP: up_proj only)
//   h.N.mlp.c_proj.*         -> model.layers.N.mlp.down_proj.*
//   mixture-of-experts layers, under DeepSeek-V3's names:
//   h.N.mlp.router.weight    -> model.layers.N.mlp.gate.weight
//   h.N.mlp.experts.E.c_fc.* -> model.layers.N.mlp.experts.E.{gate,up}_proj.*
//   h.N.mlp.experts.E.c_proj.* -> model.layers.N.mlp.experts.E.down_proj.*
//   h.N.mlp.shared_experts.{c_fc,c_proj}.* -> model.layers.N.mlp.shared_experts.{gate,up,down}_proj.*
//   ln_f.*                   -> model.norm.*
//   lm_head.weight           -> lm_head.weight
//   wpe.weight               -> model.embed_positions.weight  (learned positions: no HF Llama name)
// Each tensor-parallel shard of a fused tensor stores its piece of every part as a shard of that
// part (one segment each), so loading reassembles the parts' global tensors and joins them: a
// checkpoint of one tp loads into another.
#include <map>
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/param_table.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

namespace parallax::exec {

// A Llama-family model (rotary positions, RMSNorm or SwiGLU): checkpoints use HF Llama names.
bool hf_llama_layout(const ModelSpec& m);

// A weight Hugging Face GPT-2 keeps as a Conv1D, stored (in, out) in GPT-2 layout checkpoints:
// the transpose of the executor's (out, in) (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj).
bool hf_conv1d_weight(const std::string& name);

// The shard entries one executor tensor shard `t` (data: t.numel() floats) is stored as, named
// `prefix` + the stored name ("optimizer.m." for Adam state).
std::vector<ShardEntry> stored_entries(const ParamTensor& t, const std::string& prefix, const float* data,
                                       bool llama_layout);

// What a checkpoint stores for one executor tensor of a one-rank plan (global shapes, in order).
struct StoredTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t valid_rows = 0;  // as ParamTensor::valid_rows: the vocabulary rows of a padded embedding
};
std::vector<StoredTensor> stored_tensors(const ParamTensor& global, bool llama_layout);

// Global tensors read from a checkpoint (any layout, names possibly under "optimizer.m." or
// "optimizer.v.") under the executor's names and (out, in) layout: Conv1D weights transposed, HF
// Llama names renamed and split parts joined. Throws InputError(where, name, ...) when a part of a
// fused tensor is missing or the parts do not fit together.
std::map<std::string, GlobalTensor> to_executor_layout(std::map<std::string, GlobalTensor> stored,
                                                       const std::string& where);

}  // namespace parallax::exec
