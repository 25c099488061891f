#pragma once
// One pipeline stage's time for one micro-batch, by cost term, and the one table of those terms
// that every consumer iterates: the stage's total, the iteration's time parts (predict), the
// per-stage JSON, and the simulator's step, which plays each term on its stream. A new term is
// its field(s) here, a row of kStageTerms, and the function in iteration_costs.cpp that sets it.
#include <cstdint>

#include "parallax/costmodel/time_breakdown.hpp"

namespace parallax {

enum class Pass : int8_t { forward, backward };
inline constexpr int kPasses = 2;

// Where a term's time runs within one step of the schedule, in the order the simulator plays
// them: the ZeRO-2/3 gathers the step waits for, its compute (with the recompute and the host's
// waits), then its exposed TP time, context-parallel ring sends and expert all-to-alls.
enum class StepStream : int8_t { dp, compute, tp, cp, ep };
inline constexpr int kStepStreams = 5;

struct StageTime {
  double forward_s = 0;    // one micro-batch, all chunks of the stage
  double backward_s = 0;   // data + weight grads, one micro-batch
  double recompute_s = 0;  // recomputed forward in backward
  double tp_comm_s = 0;    // exposed TP communication, one micro-batch
  // Exposed data-parallel communication of one micro-batch's forward and backward: ZeRO-3 / FSDP
  // parameter all-gathers and gradient reduce-scatters, ZeRO-2 gradient reduce-scatters.
  double dp_forward_s = 0;
  double dp_backward_s = 0;
  // Exposed context-parallel ring traffic of one micro-batch (K and V passed round the cp ranks,
  // what the attention blocks computed meanwhile do not hide): forward, and backward with the
  // recomputed forward's.
  double cp_forward_s = 0;
  double cp_backward_s = 0;
  // Mixture of experts: the expert-group traffic of one micro-batch's MoE layers (the token
  // all-to-alls over ep and the gathers over etp), not overlapped: forward, and backward with
  // the recomputed forward's.
  double ep_forward_s = 0;
  double ep_backward_s = 0;
  // Mixture of experts: the GPU's wait for the host in one micro-batch's MoE layers, those whose
  // GPU work is shorter than the profile's moe_layer_host_s (split between the passes as the
  // layer's GPU work is).
  double host_forward_s = 0;
  double host_backward_s = 0;
  // The terms summed in kStageTerms' order.
  double total_s() const;
};

struct StageTermInfo {
  const char* name;
  double StageTime::*forward;   // the forward pass's seconds; nullptr: the term has none
  double StageTime::*backward;  // the backward pass's (recompute included); nullptr: none
  // The iteration time part it adds to: per micro-batch, on the critical stage (predict).
  double TimeBreakdown::*part;
  StepStream stream;
  // One figure for both passes (held in `forward`), which the simulator splits between the
  // passes as their compute splits (the TP collectives sit between the GEMMs of both).
  bool split_as_compute;
  // The key of predict --json's memory.per_stage entries: the passes summed; nullptr: not written.
  const char* json_key;
  // Where set, the passes are written apart: json_key the forward's, this the backward's.
  const char* json_backward_key;
  // The collective group a measured run's traces name for this time (calibration's closed loop
  // compares them); nullptr: none (compute; the data-parallel group is compared once per
  // iteration, with its synchronisation).
  const char* measured_group;
};

// In the order the stage's total sums them.
inline constexpr StageTermInfo kStageTerms[] = {
    {"compute", &StageTime::forward_s, &StageTime::backward_s, &TimeBreakdown::compute_s,
     StepStream::compute, false, "forward_s", "backward_s", nullptr},
    {"recompute", nullptr, &StageTime::recompute_s, &TimeBreakdown::compute_s, StepStream::compute,
     false, "recompute_s", nullptr, nullptr},
    {"tp", &StageTime::tp_comm_s, nullptr, &TimeBreakdown::tp_comm_s, StepStream::tp, true,
     "tp_comm_s", nullptr, "tp"},
    {"dp", &StageTime::dp_forward_s, &StageTime::dp_backward_s, &TimeBreakdown::dp_comm_exposed_s,
     StepStream::dp, false, nullptr, nullptr, nullptr},
    {"cp", &StageTime::cp_forward_s, &StageTime::cp_backward_s, &TimeBreakdown::cp_comm_s,
     StepStream::cp, false, "cp_comm_s", nullptr, "cp"},
    {"ep", &StageTime::ep_forward_s, &StageTime::ep_backward_s, &TimeBreakdown::ep_comm_s,
     StepStream::ep, false, "ep_comm_s", nullptr, "ep"},
    // On the compute stream: the step's kernels arrive as the host issues them.
    {"host", &StageTime::host_forward_s, &StageTime::host_backward_s, &TimeBreakdown::moe_host_s,
     StepStream::compute, false, "moe_host_s", nullptr, nullptr},
};

// A term's seconds in one pass (0 where it has none).
inline double pass_s(const StageTime& st, const StageTermInfo& term, Pass pass) {
  double StageTime::*field = pass == Pass::forward ? term.forward : term.backward;
  return field != nullptr ? st.*field : 0;
}

// A term's seconds, both passes: the forward's plus the backward's.
inline double term_s(const StageTime& st, const StageTermInfo& term) {
  if (term.forward == nullptr) return pass_s(st, term, Pass::backward);
  if (term.backward == nullptr) return pass_s(st, term, Pass::forward);
  return st.*term.forward + st.*term.backward;
}

inline double StageTime::total_s() const {
  double s = 0;
  for (const StageTermInfo& term : kStageTerms) {
    if (term.forward != nullptr) s += this->*term.forward;
    if (term.backward != nullptr) s += this->*term.backward;
  }
  return s;
}

// Per micro-batch, the stage's terms summed into the iteration's parts (the parts no term adds
// to stay 0: the pipeline's transfers and bubble, the once-per-iteration DP sync, the optimizer).
inline TimeBreakdown stage_parts(const StageTime& st) {
  TimeBreakdown parts;
  for (const StageTermInfo& term : kStageTerms) {
    if (term.forward != nullptr) parts.*term.part += st.*term.forward;
    if (term.backward != nullptr) parts.*term.part += st.*term.backward;
  }
  return parts;
}

}  // namespace parallax
