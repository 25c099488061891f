#pragma once
// A pipeline rank's simulated iteration binned into the schedule's phases, for charts that cannot
// show every step (MT-NLG: 240 micro-batches on 35 ranks). Shared by the report and the GUI.
#include <cstdint>
#include <vector>

#include "parallax/simulator/simulate.hpp"

namespace parallax {

// One phase of one rank: [start_s, end_s) and how its time divides. forward_s + backward_s +
// comm_s + bubble_s = end_s - start_s. comm_s is the time a transfer of the rank
// (TP, PP send or receive, DP) is in flight while its compute stream is idle; bubble_s the rest of
// the idle time.
struct PipelinePhase {
  const char* name;  // fill, warm-up, steady 1F1B, cool-down, gradient sync
  double start_s = 0;
  double end_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double comm_s = 0;
  double bubble_s = 0;
};

// fill: idle before the first forward; warm-up: forwards before the first backward; steady 1F1B:
// up to the end of the last forward; cool-down: up to the end of the last backward; gradient sync:
// up to the optimizer step. Empty phases are left out; no steps, no phases.
std::vector<PipelinePhase> pipeline_phases(const SimResult& sim, int64_t rank);

// The optimizer steps of a rank: (start_s, end_s).
std::vector<std::pair<double, double>> optimizer_steps(const SimResult& sim, int64_t rank);

// Forward steps of rank 0 (micro-batches times virtual stages).
int64_t pipeline_steps_per_rank(const SimResult& sim);

}  // namespace parallax
