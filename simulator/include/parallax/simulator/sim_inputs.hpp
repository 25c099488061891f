#pragma once
// What the event simulator plays (docs/design.md §6): a schedule table and, per pipeline rank, the
// duration of each step and transfer and the bytes it stashes, all taken from the cost model's
// iteration_costs() so that the simulator and the analytic predict() arrange the same costs.
#include <array>
#include <cstddef>
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
#include "parallax/costmodel/stage_time.hpp"

namespace parallax {

class Topology;

// One step's work on one stream: its exposed time and the bytes it moves.
struct StepCost {
  double s = 0;
  double bytes = 0;
};

// One pipeline rank, one chunk (1/vpp of the rank's layers), one micro-batch.
struct RankCosts {
  // One chunk's forward and backward step, per stream (the stage's terms, kStageTerms, summed
  // per stream and divided among the chunks): the ZeRO-3 / FSDP gathers (and ZeRO-2/3
  // reduce-scatters) the step waits for, its compute (the recompute and the MoE layers' waits
  // for the host included), its exposed TP time, the context-parallel ring's exposed sends and
  // the bytes this rank sends round the ring, the token all-to-alls and the bytes this rank
  // sends in them.
  std::array<std::array<StepCost, kStepStreams>, kPasses> step{};
  StepCost& at(Pass pass, StepStream stream) {
    return step[static_cast<size_t>(pass)][static_cast<size_t>(stream)];
  }
  const StepCost& at(Pass pass, StepStream stream) const {
    return step[static_cast<size_t>(pass)][static_cast<size_t>(stream)];
  }
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
