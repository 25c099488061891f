#pragma once
// Discrete-event simulation of one training iteration of one pipeline (data-parallel replicas
// are symmetric). Each rank has a compute stream and a stream each for TP, PP send, PP receive and
// DP communication; it runs its schedule table in order. F(mb, stage v) waits for F(mb, v-1) and
// the transfer; B(mb, v) waits for B(mb, v+1) and the transfer. A sender's compute stream waits
// for the exposed share of its transfer (blocking p2p, as Megatron-LM's schedules). After a rank's
// last backward its gradients are reduced over the data-parallel group in buckets (the profile's
// overlapped share runs under that backward), then the optimizer steps.
#include <cstdint>
#include <vector>

#include "parallax/simulator/sim_inputs.hpp"

namespace parallax {

enum class SimStream : int8_t { compute, tp, pp_send, pp_recv, dp, cp, ep };
enum class SimOpKind : int8_t {
  forward,
  backward,
  tp_forward,
  tp_backward,
  send_activation,
  send_gradient,
  dp_bucket,
  embedding_sync,
  shard_forward,   // exposed ZeRO-3 / FSDP gathers of a forward step (dp stream)
  shard_backward,  // exposed ZeRO-2/3 gathers and reduce-scatters of a backward step (dp stream)
  optimizer,
  cp_forward,   // exposed context-parallel ring sends of a forward step (cp stream)
  cp_backward,  // of a backward step, the recomputed forward's included
  ep_forward,   // mixture of experts: the token all-to-alls of a forward step (ep stream)
  ep_backward   // of a backward step, the recomputed forward's included

};
const char* to_string(SimStream s);
const char* to_string(SimOpKind k);

// One interval on one stream. A transfer is one op on the sender's PP-send stream with the
// receiver as peer. micro_batch and chunk are -1 for ops without one (dp, optimizer).
struct SimOp {
  double start_s = 0;
  double duration_s = 0;
  double bytes = 0;
  int32_t rank = 0;
  int32_t micro_batch = -1;
  int32_t chunk = -1;
  int32_t peer = -1;  // transfers: the receiving rank (its PP-receive stream holds the interval)
  SimStream stream = SimStream::compute;
  SimOpKind kind = SimOpKind::forward;
};

struct MemorySample {
  double time_s = 0;
  double bytes = 0;  // static bytes + activation stash at time_s
};

struct RankResult {
  double steps_s = 0;      // time in F/B steps (compute + exposed TP)
  double send_wait_s = 0;  // compute stream held by the exposed part of its sends
  double busy_s = 0;       // steps + optimizer: the compute stream is occupied
  double idle_s = 0;       // iteration time - busy
  // Idle before the pipeline flush (last backward of any rank) ends, not counting send waits.
  double bubble_s = 0;
  double busy_fraction = 0;    // of the iteration time
  double idle_fraction = 0;    // of the iteration time
  double bubble_fraction = 0;  // of the iteration time
  double bubble_ratio = 0;     // bubble / steps: Megatron-LM's (pp-1)/m convention
  double last_backward_end_s = 0;
  double end_s = 0;  // optimizer step done
  double peak_activation_bytes = 0;
  double peak_bytes = 0;
  std::vector<MemorySample> memory;
};

struct SimResult {
  double iteration_time_s = 0;
  double pipeline_flush_s = 0;  // last backward of any rank
  std::vector<RankResult> ranks;
  std::vector<SimOp> ops;  // empty unless recorded
  int64_t events = 0;      // events the engine processed (step completions)
  int64_t steps = 0;       // F/B steps played
  int64_t transfers = 0;   // p2p transfers
};

struct SimOptions {
  bool record_ops = true;     // keep every op (for traces and timelines)
  bool record_memory = true;  // keep the memory-over-time samples
};

SimResult simulate(const SimInputs& in, const SimOptions& opt = {});
// The same, recycling out's buffers (for callers that simulate many plans, e.g. the planner).
void simulate_into(const SimInputs& in, const SimOptions& opt, SimResult& out);

}  // namespace parallax
