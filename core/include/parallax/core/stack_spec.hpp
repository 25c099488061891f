#pragma once
// A software stack as data (presets/stacks/NAME.json): how it computes attention and what it
// overlaps with compute.
#include <map>
#include <optional>
#include <string>

#include "parallax/core/job_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

struct StackSpec {
  std::string name;
  std::string source;  // where each property comes from
  Attention attention = Attention::unfused;
  Kernels kernels = Kernels::fused;
  // With fused attention: the kernel (presets/attention/) the stack runs on each GPU architecture
  // ("sm90" -> "cudnn"); "*" is any architecture not listed.
  std::map<std::string, std::string> attention_kernels;
  StackOverlap overlap;
  Fp8Recipe fp8;
  // Bytes per logit element live at the loss's peak ("loss"), 16-bit logits: Megatron-LM's
  // vocab-parallel cross-entropy holds the logits, their fp32 copy and the fp32 softmax it keeps
  // for the backward (2 + 4 + 4); flash-attn's fused cross-entropy holds the logits and their
  // gradient (2 + 2).
  double loss_bytes_per_logit = 10;
  SelectiveRecompute selective = SelectiveRecompute::attention_core;  // "selective_recompute"
  StackPipeline pipeline;                                             // "pipeline"
  StackCapabilities capabilities;                                     // "capabilities"
};

// A job on this stack: its attention, kernels, overlaps, fp8 recipe and loss. The job's own
// overrides (a corpus row's or a job file's) are applied after.
void apply_stack(const StackSpec& stack, JobSpec& j);

// The ZeRO stage the stack runs the plan with: the plan's, except ZeRO-2/3 inside a pipeline on a
// stack that gathers the stage's parameters once per step (StackPipeline::sharded_stages), which
// moves and holds what ZeRO-1 does (gradients reduce-scattered once, parameters gathered once,
// 16-bit parameters and fp32 gradients unsharded, optimizer state sharded).
int64_t zero_stage_run(const JobSpec& j, const PlanSpec& p);

// The pipeline cut of a stack that cuts stages itself (UnevenStages::deepspeed_balanced):
// DeepSpeed's partition_balanced over unit weights (partition_method type:transformer) gives the
// smallest bottleneck, ceil(layers / pp) per stage, filled greedily from the first stage, the last
// taking what remains. validate_plan's stack rule and the planner's split enumeration share it.
struct DeepspeedStageCut {
  int64_t stage_layers;       // each stage but the last
  int64_t last_stage_layers;  // the rest; < 1 when the cut leaves the last stage empty
};
DeepspeedStageCut deepspeed_balanced_cut(int64_t layers, int64_t pp);

// Why the job's stack cannot run the plan (its capability table, JobSpec.capabilities): the JSON
// path of the field and the rule, or nullopt. validate_plan and the planner's rules share it.
struct StackRefusal {
  std::string path;
  std::string rule;
};
std::optional<StackRefusal> stack_refusal(const ModelSpec& m, const JobSpec& j, const PlanSpec& p);
// Of those, the one about the model whatever the plan (a mixture of experts on a stack without an
// MoE layer): the planner asks it before searching.
std::optional<StackRefusal> stack_model_refusal(const ModelSpec& m, const JobSpec& j);

}  // namespace parallax
