#pragma once
// Every op of one GPT micro-batch on one tensor-parallel shard, with its FLOPs and bytes moved.
// Backward is counted op by op (data-grad and weight-grad GEMMs, element-wise backward kernels),
// never as a multiple of forward.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class OpKind { gemm, memory };
enum class Phase { forward, backward_data, backward_weight, recompute };
// Communication an op list needs, in bytes per TP rank (the collective's buffer size).
enum class CommKind { none, tp_all_reduce, tp_reduce_scatter, tp_all_gather };

struct GemmShape {
  double batch = 1;  // batched GEMMs (attention) run `batch` independent M x N x K products
  double m = 0;
  double n = 0;
  double k = 0;
  double min_dim() const;
};

// Op classes: one kernel family of a trainer (calibration fits one efficiency per class, and
// `parallax compare` reports per class). "gemm" is the linear layers (qkv, proj, fc1, fc2, logits);
// "attention" is the attention core (scores, softmax, dropout, context); the others are named
// after their kernels: norm, activation, residual, rope, embedding, cross_entropy (forward and
// backward together), each with a ".bwd" class for its backward except cross_entropy.
// "optimizer" is the optimizer step (not an op of a micro-batch).
const char* op_class_of(const std::string& op_name);
inline constexpr const char* kOptimizerClass = "optimizer";

struct Op {
  std::string name;  // e.g. "fc1", "fc1.dgrad", "softmax.bwd"
  const char* op_class = "gemm";
  OpKind kind = OpKind::memory;
  Phase phase = Phase::forward;
  double flops = 0;
  double bytes = 0;  // HBM traffic of the kernel
  GemmShape shape;   // gemm only
  bool fp8 = false;  // a linear layer's GEMM of an fp8 job: runs at the fp8 peak
  // What the op's time needs of the GPU and the job's attention kernel and of no profile, filled
  // by plan_ops() (plan_ops.hpp) so that pricing under many profiles computes them once; negative
  // when not filled, and then computed where the op is priced: the GEMM's wave efficiency on the
  // GPU (gemm_waves.hpp), and a fused attention op's efficiency from the kernel's measurements.
  double wave_efficiency = -1;
  double attention_kernel_efficiency = -1;
};

struct CommOp {
  std::string name;
  CommKind kind = CommKind::none;
  Phase phase = Phase::forward;
  double bytes = 0;  // collective buffer size per rank (nccl-tests "size")
};

// The shard one rank computes: micro-batch b, tp degree t, sequence parallel, dtype.
struct ShardShape {
  int64_t micro_batch = 1;
  int64_t tp = 1;
  // Context parallelism: this rank holds seq_len / cp tokens of each sequence (its queries) and
  // attends to all seq_len keys, which reach it round the cp ring.
  int64_t cp = 1;
  bool sequence_parallel = false;
  double act_bytes = 2;  // bytes per activation element (2 for bf16/fp16)
  int64_t padded_vocab = 0;
  bool fused_attention = false;  // the job's stack tiles attention (FlashAttention)
  bool attention_unpad = false;  // q, k, v packed and the output scattered back around it
  bool eager = false;            // element-wise work op by op (PyTorch eager), not fused kernels
  bool fp8 = false;              // the layers' linear GEMMs in fp8, with their casts
  Fp8Recipe fp8_recipe;
  SelectiveRecompute selective = SelectiveRecompute::attention_core;  // the stack's policy
  // Mixture of experts: the plan's expert-parallel and expert tensor-parallel sizes, and the
  // tokens the most loaded expert-parallel rank receives over the mean (JobSpec::moe_imbalance).
  int64_t ep = 1;
  int64_t etp = 1;
  double moe_imbalance = 1;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
};

// The matmuls of one layer's forward as a PyTorch model issues them (q, k, v, o, then the FFN's
// w1, w3, w2 with SwiGLU or fc1, fc2), on this rank: output width n and contraction k. TorchTitan's
// op-level selective recompute saves the outputs of the 1st, 3rd, ... and recomputes the others.
struct LayerMatmul {
  const char* name;
  double n, k;
  bool row_parallel;  // output whole (h) on every rank, as a row-parallel linear's
};
std::vector<LayerMatmul> layer_matmuls(const ModelSpec& m, int64_t tp);

// Bytes per element the element-wise kernels of a layer and the loss move, with e bytes per
// activation element: fused kernels read and write each tensor about once; PyTorch eager runs the
// module's op sequence (derivations in ops.cpp).
struct ElementwiseBytes {
  double norm_fwd, norm_bwd;      // per normalised element
  double rope_fwd, rope_bwd;      // per element of q and k
  double swiglu_fwd, swiglu_bwd;  // per element of the FFN's hidden activation
  double loss_fwd, loss_bwd;      // per logit
};
ElementwiseBytes elementwise_bytes(const ModelSpec& m, double e, bool eager);
// Bytes one fp8 cast moves per element of a 16-bit (e bytes) tensor: read it, write its fp8 copy
// and fp8 transpose, plus one more read for the amax under current scaling.
double fp8_cast_bytes_per_element(const Fp8Recipe& r, double e);

ShardShape shard_shape(const ModelSpec& m, const JobSpec& j, const PlanSpec& p);
// Tokens of one micro-batch on this rank: micro_batch * seq_len / cp.
double shard_tokens(const ModelSpec& m, const ShardShape& s);
// Megatron-LM pads the vocabulary to a multiple of 128 * tp.
int64_t padded_vocab(int64_t vocab, int64_t tp);

// One transformer layer: forward, backward (data and weight), and recompute ops per the mode.
// moe: a mixture-of-experts layer (its FFN the routed and shared experts, moe_ops.cpp).
std::vector<Op> layer_ops(const ModelSpec& m, const ShardShape& s, Recompute recompute, bool moe = false);
std::vector<CommOp> layer_comm(const ModelSpec& m, const ShardShape& s, Recompute recompute,
                               bool moe = false);

// The expert-group traffic of one MoE layer and micro-batch on a rank (Megatron-Core's
// MoEAlltoAllTokenDispatcher): the tokens it routes (seq_len b / (cp tp), each tp rank its
// sequence-parallel share) go to their top_k experts by an all-to-all over the ep group, are
// all-gathered over the etp group when each expert's FFN is split, and come back the same way
// (reduce-scatter, all-to-all); backward sends the gradients the same way.
struct MoeLayerComm {
  double tokens = 0;     // tokens this rank routes
  // nccl-tests size of one dispatch (or combine) all-to-all: top_k rows of h per token, scaled by
  // the imbalance (the busiest rank's share bounds the exchange).
  double a2a_bytes = 0;
  double etp_bytes = 0;  // all-gather output / reduce-scatter input over etp (0 with etp 1)
  // What a deduplicating dispatcher (deepep, hybridep) needs: one row of h per routed token
  // (imbalance included), the experts and how many each token chooses.
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  double token_bytes = 0;
  double experts = 0, top_k = 0;
};
MoeLayerComm moe_layer_comm(const ModelSpec& m, const ShardShape& s);

// Bytes one rank of a deduplicating dispatcher sends in one dispatch (or combine) over an
// expert-parallel group of `ranks` members, `per_node` on each of `nodes` nodes (the alltoall
// dispatcher's top_k rows per token are all_to_all_time_s's uniform exchange of a2a_bytes):
//   deepep, hybridep: one row per token and node that holds any of its experts, other than the
//     rank's own, over the network, and one per rank that holds any of them over NVLink except
//     where that rank is the node's receiving rank itself (1 in per_node):
//       network = token_bytes (nodes - 1) (1 - P(E per_node / ranks)),
//       NVLink  = token_bytes ranks (1 - P(E / ranks)) (per_node - 1) / per_node,
//     P(q) = C(E - q, top_k) / C(E, top_k), the chance that none of a token's top_k experts
//     (uniformly chosen, as force-balanced routing makes them) is among q given ones.
struct MoeDispatchVolume {
  double nvlink_bytes = 0;
  double network_bytes = 0;
};
MoeDispatchVolume moe_dispatch_volume(const MoeLayerComm& c, int64_t ranks, int64_t per_node, int64_t nodes);
// P(q) above: none of top_k distinct experts drawn from `experts` falls among q given ones.
double experts_missed_probability(double experts, double top_k, double q);
// Embedding on the first stage; final norm, logits and cross-entropy on the last.
std::vector<Op> embedding_ops(const ModelSpec& m, const ShardShape& s);
std::vector<CommOp> embedding_comm(const ModelSpec& m, const ShardShape& s);
std::vector<Op> head_ops(const ModelSpec& m, const ShardShape& s);
std::vector<CommOp> head_comm(const ModelSpec& m, const ShardShape& s);

double total_flops(const std::vector<Op>& ops, bool include_recompute);

}  // namespace parallax
