#pragma once
// What a plan's iteration is made of before an efficiency profile prices it: the op and
// collective lists of its layers (recomputed as the plan says, and not), of its MoE layers, of the
// embedding and the head, with what pricing them needs of the GPU; the FLOP counts predict()
// reports; the memory of each stage. None of it depends on the profile, so a caller that prices
// one plan under many profiles (parallax fit's trials, cross-validation's folds) builds it once,
// and plans that share a shard (the planner's plans of one tp, cp, micro-batch, ...) share its op
// lists; predict() and iteration_costs() build their own otherwise. Pricing from these gives the
// same bits as before they existed: the lists are the ones those functions built for themselves.
#include <memory>
#include <vector>

#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax {

// One rank's shard of a micro-batch: what a plan's ops depend on (shard_shape and recompute).
struct ShardOps {
  ShardShape shard;  // shard_shape(m, j, p)
  std::vector<Op> layer_rec, layer_plain;  // layer_ops with the plan's recompute, and with none
  std::vector<CommOp> comm_rec, comm_plain;
  // A mixture of experts' MoE layers (empty for a dense model).
  std::vector<Op> moe_rec, moe_plain;
  std::vector<CommOp> moe_comm_rec, moe_comm_plain;
  MoeLayerComm moe_comm;
  std::vector<Op> embedding, head;
  std::vector<CommOp> embedding_comm, head_comm;
  // FLOPs of one micro-batch on one rank at uniform routing (moe_imbalance 1), as predict()
  // counts them: a dense layer without recompute, a recomputed layer with and without its
  // recompute pass, an MoE layer without recompute, and the head.
  double layer_plain_flops = 0;
  double layer_rec_flops_with = 0, layer_rec_flops_without = 0;
  double moe_plain_flops = 0;
  double head_flops = 0;
};

// The ops' GPU terms (Op::wave_efficiency, attention_kernel_efficiency) are those of `gpu`, the
// cluster's: they price the plan on that GPU only. p matters only through shard_shape(m, j, p)
// and p.recompute, so every plan that agrees on those may share the result. Inputs must satisfy
// validate_plan.
std::shared_ptr<const ShardOps> shard_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                                          const GpuSpec& gpu);

struct PlanOps {
  std::shared_ptr<const ShardOps> ops;  // shard_ops(m, j, p, gpu)
  std::vector<StageMemory> memory;      // stage_memory(m, j, p)
};
PlanOps plan_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p, const GpuSpec& gpu);
// With the shard's ops already built (shared with other plans): they must be shard_ops(m, j, p, gpu).
PlanOps plan_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                 std::shared_ptr<const ShardOps> ops);

}  // namespace parallax
