#pragma once
// Discrete-event simulation of one training iteration of one pipeline (data-parallel replicas
// are symmetric). Each rank has a compute stream and a stream each for TP, PP send, PP receive and
// DP communication; it runs its schedule table in order. F(mb, stage v) waits for F(mb, v-1) and
// the transfer; B(mb, v) waits for B(mb, v+1) and the transfer. A sender's compute stream waits
// for the exposed share of its transfer (blocking p2p, as Megatron-LM's schedules). After a rank's
// last backward its gradients are reduced over the data-parallel group in buckets (the profile's
// overlapped share runs under that backward), then the optimizer steps.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
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
  shard_forward,
  shard_backward,
  optimizer,
  cp_forward,
  cp_backward,
  ep_forward,
  ep_backward
};

struct SimOpKindInfo {
  SimOpKind kind;
  const char* name;  // the trace's event name
  char timeline;     // its character in text_timeline ('\0': not drawn)
};

inline constexpr SimOpKindInfo kSimOpKinds[] = {
    {SimOpKind::forward, "F", 'F'},
    {SimOpKind::backward, "B", 'B'},
    {SimOpKind::tp_forward, "tp F", 'f'},
    {SimOpKind::tp_backward, "tp B", 'b'},
    {SimOpKind::send_activation, "send act", '\0'},
    {SimOpKind::send_gradient, "send grad", '\0'},
    {SimOpKind::dp_bucket, "dp bucket", '\0'},
    {SimOpKind::embedding_sync, "embedding sync", '\0'},
    // exposed ZeRO-3 / FSDP gathers of a forward step; ZeRO-2/3 gathers and reduce-scatters of a
    // backward step
    {SimOpKind::shard_forward, "shard F", '\0'},
    {SimOpKind::shard_backward, "shard B", '\0'},
    {SimOpKind::optimizer, "optimizer", 'o'},
    // exposed context-parallel ring sends of a step (the backward's: its recomputed forward's too)
    {SimOpKind::cp_forward, "cp F", '\0'},
    {SimOpKind::cp_backward, "cp B", '\0'},
    // mixture of experts: the token all-to-alls of a step
    {SimOpKind::ep_forward, "ep F", '\0'},
    {SimOpKind::ep_backward, "ep B", '\0'},
};

constexpr bool sim_op_kinds_in_order() {
  for (size_t i = 0; i < std::size(kSimOpKinds); ++i) {
    if (static_cast<size_t>(kSimOpKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(sim_op_kinds_in_order(), "kSimOpKinds lists the kinds in SimOpKind's order");

// The ops of one step, per StepStream (RankCosts::step): the stream each is drawn on and its kind
// in each pass.
struct StepOpInfo {
  SimStream stream;
  SimOpKind kinds[kPasses];
};

inline constexpr std::array<StepOpInfo, kStepStreams> kStepOps = {{
    {SimStream::dp, {SimOpKind::shard_forward, SimOpKind::shard_backward}},
    {SimStream::compute, {SimOpKind::forward, SimOpKind::backward}},
    {SimStream::tp, {SimOpKind::tp_forward, SimOpKind::tp_backward}},
    {SimStream::cp, {SimOpKind::cp_forward, SimOpKind::cp_backward}},
    {SimStream::ep, {SimOpKind::ep_forward, SimOpKind::ep_backward}},
}};

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
