#pragma once
// The costs one training iteration is made of, before they are arranged in time: per pipeline
// stage the compute and exposed TP time of one micro-batch, the p2p transfer between stages, the
// data-parallel gradient synchronisation and the optimizer step. The analytic model (predict.hpp)
// and the event simulator arrange the same costs, so they can only differ in the arrangement.
#include <algorithm>
#include <cmath>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/plan_ops.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/costmodel/stage_time.hpp"
#include "parallax/topologies/topology.hpp"

namespace parallax {

struct IterationCosts {
  std::vector<StageTime> stages;  // pp entries
  // One activation (forward) or gradient (backward) transfer between neighbouring stages for one
  // micro-batch and one chunk, including the receiver's TP all-gather without SP.
  double p2p_s = 0;
  // Share of each transfer the sender waits for: what the compute of one chunk cannot hide when
  // the stack overlaps p2p (interleaved schedule), else 1 - the profile's pp overlap.
  double p2p_exposed_fraction = 1;
  // Transfers a stage waits for per micro-batch and chunk in the steady state: 2 (Megatron-LM
  // pairs each send with the opposite receive), 4 where the stack's transfers block one after the
  // other and the stage has two neighbours (StackPipeline::sequential_p2p, pp >= 3).
  double p2p_per_micro_batch = 2;
  // Per stage: the once-per-iteration data-parallel synchronisation (gradient all-reduce or
  // reduce-scatter, the distributed optimizer's parameter all-gather); 0 for ZeRO-3, whose
  // traffic is per micro-batch (StageTime::dp_forward_s, dp_backward_s).
  std::vector<double> dp_s;
  double embedding_sync_s = 0;      // tied embedding all-reduce between first and last stage
  // Per stage: what of dp_s (and the embedding all-reduce, on the first and last stage) adds to
  // the iteration: the stack's overlaps, else 1 - the profile's dp overlap of it.
  std::vector<double> dp_exposed_s;
  std::vector<double> optimizer_s;  // per stage
  // Mixture of experts: one dispatch all-to-all of one MoE layer and micro-batch on the slowest
  // expert-parallel group of any stage, and its nccl-tests size per rank (0 without ep); with a
  // deduplicating dispatcher (deepep, hybridep) the bytes one rank sends (moe_dispatch_volume).
  double ep_all_to_all_s = 0;
  double ep_all_to_all_bytes = 0;
  double peak_flops_per_s = 0;      // dense peak of the job's dtype
  double cache_fraction = 0;        // cache_resident_fraction() the op times used
};

// Time of one op on one GPU under the profile, as iteration_costs sums it (calibration compares
// op classes with it): with cache_fraction h > 0 and a warm efficiency for the op, h * warm +
// (1 - h) * cold time. Throws InputError when the GPU lacks the job's dtype.
// Layers the profile measured (op_class_efficiency_by_layer) use their own class efficiencies.
double op_time_s(const Op& op, const GpuSpec& gpu, const JobSpec& j, const EfficiencyProfile& prof,
                 double cache_fraction = 0, const LayerKey& layer = {});
// A model's layer dimensions and a tp (0: any), as profiles key per-layer class efficiencies.
LayerKey layer_key(const ModelSpec& m, int64_t tp = 0);
// Fraction of a plan's per-rank working set the profile's cache_bytes_per_rank holds,
// min(1, cache / W), W = the largest stage's weights + gradients + stashed activations + buffers
// (memory.hpp; optimizer state is left out: only the optimizer step touches it). 0 when the
// profile has no cache size (GPU profiles).
double cache_resident_fraction(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                               const EfficiencyProfile& prof);
// An op's roofline time at efficiency 1: bytes at the GPU's bandwidth, GEMMs at least their FLOPs
// at the dtype's peak. Calibrated class efficiencies are fractions of it.
double op_roofline_s(const Op& op, double peak_flops_per_s, double bandwidth_bytes_per_s);
// Megatron-Core's gradient bucket size: max(40M, 1M x the data-parallel size) parameters
// (megatron/core/distributed: "if using very large dp_sizes, make buckets larger to ensure that
// chunks used in NCCL ring-reduce implementations are large enough to remain bandwidth-bound").
// An overlapped synchronisation exposes at least its last bucket.
inline constexpr double kDpBucketParams = 40e6;
inline constexpr double kDpBucketParamsPerRank = 1e6;
inline double dp_bucket_params(int64_t dp) {
  return std::max(kDpBucketParams, kDpBucketParamsPerRank * static_cast<double>(dp));
}
// The buckets `params` gradients are reduced in over `dp` ranks (at least one).
inline int64_t dp_bucket_count(double params, int64_t dp) {
  const double bucket = dp_bucket_params(dp);
  return params > bucket ? static_cast<int64_t>(std::ceil(params / bucket)) : 1;
}
// Time an overlapped collective of comm_s adds when it runs under under_s of compute: what the
// compute cannot hide, never less than min_exposed_s (the part with nothing to run under), plus
// the compute's slowdown while they share the GPU (slowdown x the overlapped time).
double overlapped_time_s(double comm_s, double under_s, double min_exposed_s, double slowdown);
// The fraction by which an overlapped collective slows compute: the SMs its thread blocks hold,
// comm_ctas / sm_count (0 when the GPU's SM count is not given).
double overlap_slowdown(const GpuSpec& gpu, const StackOverlap& overlap);
// Bytes the optimizer step moves per parameter (Adam, gradient norm and zeroing).
inline constexpr double kOptimizerBytesPerParam = 38;
// The optimizer step of `params` parameters on one rank.
double optimizer_time_s(double params, const GpuSpec& gpu, const JobSpec& j,
                        const EfficiencyProfile& prof);

// The context-parallel ring of one layer and micro-batch (Megatron-Core's cp_comm_type p2p,
// Transformer Engine's AttnFuncWithCPAndKVP2P): cp - 1 steps, each sending this rank's K and V
// (kv_bytes) to the next rank while the attention block of the pair at hand is computed; the
// backward sends K, V and the partial dK, dV (twice the bytes) under each backward block.
struct CpRingLayer {
  double kv_bytes = 0;           // K and V of seq_len / cp tokens, this TP rank's KV heads
  double step_forward_s = 0;     // one forward send on the slowest ring of the stage
  double step_backward_s = 0;    // one backward send (2 kv_bytes)
  double exposed_forward_s = 0;  // (cp - 1) steps, each less the attention block it runs under
  double exposed_backward_s = 0;
};

// Throws InputError when the GPU lacks the dtype or the profile lacks the framework.
// Communication times come from the cluster graph (topologies): the plan's placement decides
// which GPUs form each TP/DP/PP group and which links the groups share.
IterationCosts iteration_costs(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                               const PlanSpec& p, const EfficiencyProfile& prof);
// The same with a topology built once and reused (its plan analyses are memoised).
IterationCosts iteration_costs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                               const PlanSpec& p, const EfficiencyProfile& prof);
// The same with the plan's op lists built once (plan_ops.hpp): they must be plan_ops(m, j, p,
// the cluster's GPU).
IterationCosts iteration_costs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                               const PlanSpec& p, const EfficiencyProfile& prof, const PlanOps& ops);

}  // namespace parallax
