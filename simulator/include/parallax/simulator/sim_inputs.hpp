#pragma once
// What the event simulator plays (docs/design.md §6): a schedule table and, per pipeline rank, the
// duration of each step and transfer and the bytes it stashes, all taken from the cost model's
// iteration_costs() so that the simulator and the analytic predict() arrange the same costs.
#include <cstdint>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax {

class Topology;

// One pipeline rank, one chunk (1/vpp of the rank's layers), one micro-batch.
struct RankCosts {
  double forward_s = 0;         // forward compute of one chunk
  double forward_tp_s = 0;      // exposed TP communication of that forward
  double forward_dp_s = 0;      // exposed ZeRO-3 / FSDP parameter gathers of that forward
  double backward_s = 0;        // recompute + data/weight-grad compute of one chunk
  double backward_tp_s = 0;     // exposed TP communication of that backward
  double backward_dp_s = 0;     // exposed ZeRO-2/3 gathers and reduce-scatters of that backward
  double forward_cp_s = 0;      // exposed context-parallel ring sends of that forward
  double backward_cp_s = 0;     // of that backward (and its recomputed forward)
  double cp_forward_bytes = 0;  // bytes this rank sends round the ring in that forward
  double cp_backward_bytes = 0;
  double forward_ep_s = 0;      // mixture of experts: the token all-to-alls of that forward
  double backward_ep_s = 0;     // of that backward (and its recomputed forward)
  double ep_forward_bytes = 0;  // bytes this rank sends in them
  double ep_backward_bytes = 0;
  double dp_s = 0;              // gradient synchronisation over the data-parallel group
  int64_t dp_buckets = 1;       // the synchronisation runs as this many equal buckets
  double dp_bytes = 0;          // gradient bytes reduced
  double dp_hidden_s = 0;       // of dp_s + embedding_sync_s, what runs under the backward
  double embedding_sync_s = 0;  // tied-embedding all-reduce (first and last rank), after dp
  double optimizer_s = 0;
  double chunk_activation_bytes = 0;  // stashed by one chunk's forward until its backward
  double static_bytes = 0;            // weights, grads, optimizer state and buffers (memory model)
};

struct SimInputs {
  ScheduleTable table;
  std::vector<RankCosts> ranks;  // pp entries
  double p2p_s = 0;              // one transfer of one chunk's activation or gradient
  double p2p_bytes = 0;          // bytes one TP rank sends per transfer
  // Share of each transfer the sender's compute stream waits for (1 - profile's pp overlap):
  // Megatron-LM's blocking send_forward_recv_backward / send_backward_recv_forward.
  double p2p_exposed_fraction = 1;
  // The receiver's compute stream also waits for each receive (StackPipeline::sequential_p2p:
  // DeepSpeed's blocking, paired transfers).
  bool p2p_receive_blocks = false;
};

// Costs of the plan from iteration_costs() and stage_memory(). Inputs must satisfy validate_plan
// and the plan's schedule must be runnable (make_schedule throws InputError otherwise).
// The ClusterSpec form builds the cluster graph (milliseconds); callers simulating many plans on one
// cluster pass a Topology, whose plan analyses are memoised.
SimInputs make_sim_inputs(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                          const PlanSpec& p, const EfficiencyProfile& prof);
SimInputs make_sim_inputs(const ModelSpec& m, const Topology& topo, const JobSpec& j,
                          const PlanSpec& p, const EfficiencyProfile& prof);
// From costs already computed: `costs` must be iteration_costs(m, topo, j, p, prof) and `memory`
// stage_memory(m, j, p), as a Prediction holds them (Prediction::costs, Prediction::memory); the
// planner's refiner simulates its top plans from their predictions this way.
SimInputs make_sim_inputs(const ModelSpec& m, const JobSpec& j, const PlanSpec& p,
                          const IterationCosts& costs, const std::vector<StageMemory>& memory);

}  // namespace parallax
