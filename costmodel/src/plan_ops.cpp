#include "parallax/costmodel/plan_ops.hpp"

#include <string_view>
#include <utility>

#include "parallax/costmodel/attention_efficiency.hpp"
#include "parallax/costmodel/gemm_waves.hpp"

namespace parallax {
namespace {

// Op::wave_efficiency and Op::attention_kernel_efficiency, as iteration_costs would compute them.
void fill_gpu_terms(std::vector<Op>& ops, const GpuSpec& gpu, const AttentionKernel* kernel) {
  for (Op& op : ops) {
    if (op.kind == OpKind::gemm) op.wave_efficiency = wave_efficiency(op.shape, gpu);
    if (kernel && std::string_view(op.op_class).starts_with("flash_attention"))
      op.attention_kernel_efficiency = op_attention_kernel_efficiency(op, *kernel, gpu.arch);
  }
}

}  // namespace

std::shared_ptr<const ShardOps> shard_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                                          const GpuSpec& gpu) {
  auto out = std::make_shared<ShardOps>();
  ShardOps& o = *out;
  o.shard = shard_shape(m, j, p);
  const ShardShape& sh = o.shard;
  o.layer_rec = layer_ops(m, sh, p.recompute);
  o.layer_plain = layer_ops(m, sh, Recompute::none);
  o.comm_rec = layer_comm(m, sh, p.recompute);
  o.comm_plain = layer_comm(m, sh, Recompute::none);
  if (m.is_moe()) {
    o.moe_rec = layer_ops(m, sh, p.recompute, true);
    o.moe_plain = layer_ops(m, sh, Recompute::none, true);
    o.moe_comm_rec = layer_comm(m, sh, p.recompute, true);
    o.moe_comm_plain = layer_comm(m, sh, Recompute::none, true);
    o.moe_comm = moe_layer_comm(m, sh);
  }
  o.embedding = embedding_ops(m, sh);
  o.head = head_ops(m, sh);
  o.embedding_comm = embedding_comm(m, sh);
  o.head_comm = head_comm(m, sh);
  // The fused attention kernel the stack runs on this GPU (iteration_costs' rates_for).
  const AttentionKernel* kernel =
      j.attention == Attention::fused ? attention_kernel_for(j.attention_kernels, gpu.arch) : nullptr;
  for (std::vector<Op>* ops : {&o.layer_rec, &o.layer_plain, &o.moe_rec, &o.moe_plain, &o.embedding, &o.head})
    fill_gpu_terms(*ops, gpu, kernel);

  // The FLOP counts: an imbalance slows the busiest rank, it does not add work.
  ShardShape uniform = sh;
  uniform.moe_imbalance = 1;
  o.layer_plain_flops = total_flops(layer_ops(m, uniform, Recompute::none), false);
  const std::vector<Op> rec = layer_ops(m, uniform, p.recompute);
  o.layer_rec_flops_with = total_flops(rec, true);
  o.layer_rec_flops_without = total_flops(rec, false);
  if (m.moe_layers() > 0) o.moe_plain_flops = total_flops(layer_ops(m, uniform, Recompute::none, true), false);
  o.head_flops = total_flops(head_ops(m, uniform), false);
  return out;
}

PlanOps plan_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p, const GpuSpec& gpu) {
  return plan_ops(m, j, p, shard_ops(m, j, p, gpu));
}

PlanOps plan_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                 std::shared_ptr<const ShardOps> ops) {
  return {std::move(ops), stage_memory(m, j, p)};
}

}  // namespace parallax
