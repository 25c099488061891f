#pragma once
// What is being trained: batch, tokens, precision, optimizer, price, and the software stack.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/attention_kernel.hpp"

#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

// Bytes per parameter for weights + gradients + optimizer state with mixed-precision Adam.
//   b16: bf16 weights 2, bf16 grads 2, fp32 master + m + v 12 (ZeRO paper)
//   b18: bf16 weights 2, fp32 grads 4, fp32 master + m + v 12 (Megatron-LM, docs/design.md)
//   b20: fp16 weights 2, fp16 grads 2 + fp32 grad copy 4, fp32 master + m + v 12 (MT-NLG paper)
enum class ParamBytesConvention { b16, b18, b20 };

// How the stack computes attention's core (scores, softmax, context): unfused materialises the
// s x s scores and probabilities (Megatron-LM's scale-mask-softmax kernels, Korthikanti et al.
// 2022); fused tiles them in on-chip memory (FlashAttention, cuDNN fused attention) and stores none.
enum class Attention { unfused, fused };

// How the stack runs the element-wise work around the GEMMs (norms, activation, rotary
// embedding, the loss): fused kernels (Megatron-LM, Transformer Engine, Apex, torch.compile,
// flash-attn's cross-entropy) read and write each tensor about once; PyTorch eager runs the
// module's op sequence, one kernel per op, each a round trip to HBM (costmodel/src/ops.cpp).
enum class Kernels { fused, eager };

// What the stack runs under compute instead of after it (presets/stacks/, "overlap"). Each
// overlapped collective costs max(the part with nothing to run under, its time - the compute it
// runs under), and slows that compute while they share the GPU: the collective's comm_ctas thread
// blocks leave the GEMMs comm_ctas / sm_count fewer SMs (costmodel/iteration_costs.cpp).
struct StackOverlap {
  // Data-parallel gradient all-reduce / reduce-scatter in buckets under the backward pass
  // (Megatron-Core --overlap-grad-reduce, DeepSpeed overlap_comm, PyTorch DDP and FSDP).
  bool grad_reduce = false;
  // The distributed optimizer's parameter all-gather under the next forward pass (Megatron-Core
  // --overlap-param-gather).
  bool param_gather = false;
  // ZeRO-3 / FSDP: the next layer's parameter all-gather (and the previous layer's gradient
  // reduce-scatter) under this layer's compute (FSDP forward/backward prefetch, DeepSpeed
  // stage3_prefetch_bucket_size). Without it every gather waits.
  bool sharded_prefetch = false;
  // TP all-gather / reduce-scatter under the neighbouring GEMMs, with sequence parallelism
  // (Megatron-Core --tp-comm-overlap, Transformer Engine userbuffers).
  bool tp_comm = false;
  // Pipeline sends and receives under compute with the interleaved schedule (Megatron-Core
  // overlap_p2p_comm).
  bool p2p = false;
  // Thread blocks (SMs) an overlapped collective occupies (NCCL channels).
  int64_t comm_ctas = 0;
  bool operator==(const StackOverlap&) const = default;
};

// How the stack runs an fp8 job (presets/stacks/, "fp8"): the four linear layers' forward, dgrad
// and wgrad GEMMs in fp8, attention and the output layer in 16 bits. Each fp8 GEMM input is cast
// from 16 bits to fp8 with its transpose (Hopper's fp8 MMA takes only the TN layout): the
// activation in forward, the output gradient in backward, the weight once per iteration
// (Transformer Engine caches it over micro-batches) or per micro-batch (torchao's Float8Linear).
// Delayed scaling takes the scale from past amax history inside the cast kernel; current
// (dynamic) scaling reads the tensor once more for its amax first. MXFP8 (the OCP microscaling
// format, Blackwell's block-scaled MMA) scales every 32 consecutive elements by a power of two
// (E8M0, one byte) that the cast kernel takes from the block's own amax in the same pass: it
// writes the fp8 copy along rows and the one along columns, each with its scales, and needs
// compute capability 10 (Transformer Engine's MXFP8BlockScaling).
enum class Fp8Scaling { delayed, current, mxfp8 };
inline constexpr std::array<Fp8Scaling, 3> kFp8Scalings = {Fp8Scaling::delayed, Fp8Scaling::current,
                                                            Fp8Scaling::mxfp8};
const char* to_string(Fp8Scaling s);
// Whether the GPU runs the recipe: MXFP8 needs Blackwell's block-scaled MMA (compute capability 10
// or later); a device whose arch is not a compute capability (a CPU) runs any recipe's arithmetic.
bool fp8_scaling_supported(Fp8Scaling s, const GpuSpec& g);
// The recipe spelled as to_string spells it; nullopt for any other spelling.
std::optional<Fp8Scaling> fp8_scaling_from(const std::string& name);
struct Fp8Recipe {
  Fp8Scaling scaling = Fp8Scaling::delayed;
  bool weight_cast_per_micro_batch = false;
  bool operator==(const Fp8Recipe&) const = default;
};

// How a stack runs a pipeline (presets/stacks/, "pipeline").
struct StackPipeline {
  // ZeRO-2/3 (FSDP) inside the stages of a pipeline. DeepSpeed's pipeline engine refuses ZeRO-2/3
  // and Megatron-LM shards only optimizer state when pp > 1; TorchTitan wraps each stage in FSDP2
  // but, with pp > 1, neither reshards parameters after forward nor reduce-scatters gradients
  // before the last micro-batch: parameters are gathered once per step and kept, gradients
  // accumulate unsharded and are reduce-scattered once. That is ZeRO-1's traffic and memory
  // (zero_stage_run below).
  bool sharded_stages = false;
  // Micro-batches per iteration when the run does not say: the pipeline size (TorchTitan's
  // pipeline_parallel_microbatches default) instead of the plan's choice.
  bool micro_batches_default_pp = false;
  // Virtual stages per rank of the interleaved schedule when the run does not say (TorchTitan's
  // generate_split_points: 2 for multi-stage schedules); 0 = the plan's choice.
  int64_t default_virtual_stages = 0;
  // The stack cuts the model into pp x vpp stages that may differ by a layer (TorchTitan's
  // generate_split_points), so an uneven pipeline split combines with interleaving; Megatron-LM
  // needs equal virtual stages.
  bool unequal_virtual_stages = false;
  // Each send and receive blocks both stages, one after the other (DeepSpeed's pipeline engine:
  // RecvActivation, SendGrad, forward, SendActivation, RecvGrad, backward, each transfer 'blocking
  // and must be paired'): a stage with two neighbours waits for 4 transfers per micro-batch, where
  // Megatron-LM batches each send with the opposite receive (send_forward_recv_backward): 2.
  bool sequential_p2p = false;
  bool operator==(const StackPipeline&) const = default;
};

// What a stack can run at all (presets/stacks/, "capabilities"): the planner's rules and the
// exporters read the same table, so no plan is ranked that its stack's launch refuses. A stack
// without a table (a job file's own stack, "other") is not restricted.
enum class Exporter { none, megatron, deepspeed, parallax, torchtitan };
enum class UnevenStages { any, none, deepspeed_balanced };
struct StackCapabilities {
  std::vector<int64_t> zero_stages{0, 1, 2, 3};
  std::vector<Schedule> schedules{Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved};
  std::vector<Position> positions{Position::learned, Position::rope, Position::alibi};
  bool tensor_parallel = true;
  bool sequence_parallel = true;
  // ZeRO-0 (DDP) only as the sole parallelism: with cp > 1, or dp > 1 beside tp or pp, the stack
  // shards instead (TorchTitan: FSDP2 over dp_shard x cp whenever cp > 1, and "DDP has not
  // supported > 1D parallelism").
  bool zero0_sole_parallelism = false;
  bool pipeline_parallel = true;
  bool grouped_query_attention = true;  // kv_heads below heads
  // First/last pipeline stages of their own size: any (Megatron-LM's --decoder-first/last-
  // pipeline-num-layers), none, or only the split the stack makes itself when the layers do not
  // divide (DeepSpeed's PipelineModule, partition_method type:transformer: every stage
  // ceil(layers / pp) layers from the first, the last what remains).
  UnevenStages uneven_stages = UnevenStages::any;
  // The embedding and the loss counted as layers of the pipeline split (Megatron-Core's
  // --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split).
  bool pipeline_split_accounting = false;
  bool fp8 = true;
  // Interleaved micro-batches in groups other than pp (Megatron-Core's
  // --microbatch-group-size-per-virtual-pipeline-stage).
  bool microbatch_groups = true;
  // Context parallelism (the sequence split over cp ranks, keys and values passed round a ring):
  // whether the stack runs it, the --cp-comm-type its launch names (empty: it names none, its
  // default ring), and when it cannot, why (a one-line reason the refusal quotes).
  bool context_parallel = true;
  std::string cp_comm_type;
  std::string context_parallel_refusal;
  // The stack keeps tp x cp inside a node (its ring on NVLink); the planner's cp-within-node rule.
  bool context_parallel_within_node = false;
  // Mixture-of-experts models: whether the stack trains them as Parallax costs them (Megatron-
  // Core's MoE layer: router, token permutation, grouped expert GEMMs, all-to-all dispatch), and
  // with expert parallelism; when not, why (a one-line reason the refusal quotes).
  bool moe = false;
  bool expert_parallel = false;
  // Expert tensor parallelism other than tp (etp != tp): Megatron-Core's parallel folding. Without
  // it the experts are sharded over tp as the dense MLP is (etp 0 or tp only).
  bool expert_tensor_parallel = false;
  // The ZeRO stages the stack runs with expert parallelism (ep > 1); empty: all of zero_stages.
  std::vector<int64_t> expert_parallel_zero;
  // The token dispatchers the stack runs with expert parallelism (PlanSpec::moe_dispatcher).
  std::vector<MoeDispatcher> moe_dispatchers{MoeDispatcher::alltoall};
  std::string moe_refusal;
  // The launch `parallax export` writes for this stack's plans; none: Parallax writes none.
  Exporter exporter = Exporter::none;
  bool operator==(const StackCapabilities&) const = default;
};

// What a stack's selective recompute keeps (presets/stacks/, "selective_recompute"):
//   attention_core     Megatron-LM (Korthikanti et al. 2022): everything but the attention core's
//                      s x s tensors, which are recomputed (nothing to recompute when fused);
//   alternate_matmuls  TorchTitan's op-level policy: per layer, its input and the outputs of the
//                      attention kernel and of every second matmul (the 1st, 3rd, ...) are saved;
//                      the other matmuls and every element-wise op are recomputed in backward.
enum class SelectiveRecompute { attention_core, alternate_matmuls };

struct JobSpec {
  int64_t global_batch = 0;  // sequences per iteration
  // Mixture of experts: tokens the most loaded expert-parallel rank receives over the mean
  // (max / mean of the routed tokens per rank); 1 = uniform routing, the load-balanced ideal.
  // Dropless routing lets it exceed the capacity factor; with one, it is capped there.
  double moe_imbalance = 1;
  double tokens = 0;         // total training tokens; 0 = not given
  Dtype dtype = Dtype::bf16;
  std::string optimizer = "adam";
  double price_per_gpu_hour_usd = 0;  // 0 = not given
  ParamBytesConvention bytes_per_param = ParamBytesConvention::b18;
  // Software stack the run uses; selects that stack's entry in the efficiency profile.
  std::string framework = "megatron-lm";
  // From the stack's preset (presets/stacks/) unless the job says otherwise.
  Attention attention = Attention::unfused;
  // The fused attention kernel the job names ("attention_kernel"), for every GPU; empty = the
  // stack's choice per architecture.
  std::string attention_kernel;
  // The kernels that choice resolves to, each with the measurements of the architectures it runs
  // on (read_job loads them from presets/attention/); the first with points for the GPU's
  // architecture applies.
  std::vector<AttentionKernel> attention_kernels;
  // The stack packs q, k and v into one variable-length batch before a fused attention kernel and
  // scatters its output back (llm-foundry's flash_attn_fn: flash-attn's unpad_input / pad_input
  // around flash_attn_varlen_func): copies the cost model charges (ops.cpp). From the job.
  bool attention_unpad = false;
  // From the stack's preset unless the job says otherwise.
  Kernels kernels = Kernels::fused;
  // From the stack's preset; nothing overlapped for a stack without one.
  StackOverlap overlap;
  // From the stack's preset; used when dtype is fp8.
  Fp8Recipe fp8;
  // From the stack's preset: bytes per logit element the loss holds at its peak (StackSpec).
  double loss_bytes_per_logit = 10;
  // From the stack's preset: what recompute "selective" keeps.
  SelectiveRecompute selective = SelectiveRecompute::attention_core;
  // From the stack's preset: sharding inside pipeline stages, default micro-batches and virtual
  // stages, and whether virtual stages may be unequal.
  StackPipeline pipeline;
  // From the stack's preset: what it can run, and which launch Parallax writes for it.
  StackCapabilities capabilities;
};

const char* to_string(ParamBytesConvention c);
const char* to_string(Attention a);
const char* to_string(Kernels k);
const char* to_string(Exporter e);
int bytes_per_param(ParamBytesConvention c);

}  // namespace parallax
