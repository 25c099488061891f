#pragma once
// Memory per GPU, per pipeline stage (docs/design.md §4): weights, gradients and optimizer state by the
// bytes-per-parameter convention and ZeRO stage; activations by Korthikanti et al. 2022; buffers.
#include <cstdint>
#include <vector>

#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax {

// Bytes per parameter of each tensor family before ZeRO sharding.
struct ParamBytes {
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double total() const { return weights + grads + optimizer; }
};
ParamBytes param_bytes(ParamBytesConvention c);

// Parameters one rank holds for one transformer layer (tp-sharded; norms and row-parallel biases
// replicated).
double layer_params_per_rank(const ModelSpec& m, int64_t tp);
// Mixture of experts: one MoE layer's parameters on a rank, by the ranks that reduce their
// gradients: `dense` (attention, norms, the router, the shared experts split over tp; over the
// dp x cp ranks as a dense layer's) and `expert` (its num_experts / ep routed experts, each FFN
// 1/etp of its width; over the expert data-parallel ranks, expert_grad_ranks).
struct MoeLayerParams {
  double dense = 0;
  double expert = 0;
};
MoeLayerParams moe_layer_params_per_rank(const ModelSpec& m, const PlanSpec& p);
// MoE layers among the layers of pipeline stage `stage` (stage_layer_ids); 0 for a dense model.
int64_t stage_moe_layers(const ModelSpec& m, const PlanSpec& p, int64_t stage);
// The routed experts' parameters on the stage's rank (part of stage_params_per_rank).
double stage_expert_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage);
// What an MoE layer's FFN stashes for the backward on a rank, one micro-batch, 16-bit, with no
// recompute, less the dense MLP's it replaces (layer_activation_bytes counts every layer as
// dense): the router's fp32 scores (4 E per routed token); the R = etp T top_k imbalance rows
// the rank's experts receive (their input h, the FFN's hidden tensors as a dense MLP of width
// expert_ffn_hidden / etp keeps them); the top_k output rows per routed token the un-permutation
// weights; and the shared experts as a dense MLP of their width.
double moe_ffn_extra_activation_bytes(const ModelSpec& m, const JobSpec& j, const PlanSpec& p);

// Parameters on pipeline stage `stage` of one tensor-parallel rank (stage_layers() of them).
double stage_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage);
// Of those, the parameters outside the transformer layers (embeddings, final norm, output layer):
// the unit ZeRO-3 / FSDP gathers and reduce-scatters beside the layers.
double stage_non_layer_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage);

// Korthikanti et al. 2022 activation bytes of ONE layer for ONE micro-batch (16-bit activations):
//   none, no SP:  s b h (10 + 24/t + 5 a s/(h t))      none, SP:  s b h/t (34 + 5 a s/h)
// The 24 is GPT's tensor-parallel part (tp_sharded_bytes_per_token / h): Q and the attention
// output 2h each (2 a d with a decoupled head_dim d), K and V 2h each, the MLP's 4f = 16h; with
// grouped-query attention K and V are 2 kv d each, and a SwiGLU MLP keeps more
// (tp_sharded_bytes_per_token).
//   selective:    drop the 5 a s/h term                 full:      2 s b h  (÷ t with SP)
// Fused attention stores no s x s tensor (probabilities, dropout mask): the 5 a s/h term becomes
// the fp32 row log-sum-exp, 4 a s b bytes per layer (÷ t), i.e. 4 a/h of s b h. A model without
// dropout stores no masks: 10 -> 8 and 34 -> 32, and 5 a s/h -> 2 a s/h (the softmax output).
// TorchTitan's selective policy (SelectiveRecompute::alternate_matmuls) keeps, per token, the
// layer input, the outputs of the 1st, 3rd, ... matmuls (layer_matmuls) and of the attention
// kernel (with its fp32 log-sum-exp): e (h + sum of those widths + a d / t) + 4 a / t bytes, the
// input and row-parallel outputs whole (÷ t with SP), the column-parallel ones ÷ t.
double layer_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t tp, bool sp,
                              Recompute r, Attention attention = Attention::unfused,
                              SelectiveRecompute policy = SelectiveRecompute::attention_core,
                              Kernels kernels = Kernels::fused);
// The same for a plan's rank: its seq_len / cp tokens (context parallelism divides the layer's
// activations by cp; it runs with fused attention only) and the job's stack.
double layer_activation_bytes(const ModelSpec& m, const JobSpec& j, const PlanSpec& p, Recompute r);
// Bytes per token of one layer's activations split over the tensor-parallel group (16-bit): Q
// and the attention output (2h each), K and V (2 kv d each: grouped-query attention keeps kv_heads
// of them), and the MLP's intermediates. GELU keeps its input and output (2 x 2f); SwiGLU run op by
// op keeps the gate projection (SiLU's input), SiLU's output, the up projection and their product
// (4 x 2f: PyTorch eager's silu and mul each save their inputs); fused into one kernel (Megatron's
// bias_swiglu, Transformer Engine, torch.compile) it keeps the two projections and the product
// (3 x 2f). The layer norms' inputs and the two linear inputs before the split are the
// replicated 8h.
double tp_sharded_bytes_per_token(const ModelSpec& m, Kernels kernels);
// Activation bytes one micro-batch leaves stashed on a pipeline stage (all its layers, the
// dtype's activation width) until its backward: the per-micro-batch unit of StageMemory's
// activations. With vpp chunks each chunk holds 1/vpp of it.
double stage_activation_bytes_per_micro_batch(const ModelSpec& m, const JobSpec& j,
                                              const PlanSpec& p, int64_t stage);
// Micro-batches (each holding the stage's layers) in flight on a pipeline stage at the peak.
//   gpipe: m; 1f1b: min(pp - k, m); interleaved: chunks in flight / vpp (Megatron-LM's warm-up).
double in_flight_micro_batches(const PlanSpec& p, int64_t stage);

struct StageMemory {
  int64_t stage = 0;
  double params = 0;
  double expert_params = 0;  // of params, the routed experts' (sharded over the edp ranks)
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;  // Korthikanti stash: layers x in-flight x per-layer bytes
  double buffers_bytes = 0;      // recompute working set, logits/loss, p2p and TP buffers
  double total_bytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activations_bytes + buffers_bytes;
  }
};

std::vector<StageMemory> stage_memory(const ModelSpec& m, const JobSpec& j, const PlanSpec& p);

}  // namespace parallax
