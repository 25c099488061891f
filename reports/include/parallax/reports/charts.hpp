#pragma once
// The report's charts as inline SVG: where memory goes per pipeline stage, where time goes, how
// the pipeline fills (a Gantt of one simulated iteration), and where scaling stops paying.
#include <string>
#include <vector>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/planner/capacity.hpp"
#include "parallax/simulator/simulate.hpp"

namespace parallax {

// Stacked bars per stage (weights, grads, optimizer, activations, buffers) against the GPU's
// capacity, the reserve marked under it, and each bar's headroom.
std::string memory_chart(const Prediction& pr);
// One horizontal stacked bar: compute, TP, PP p2p, bubble, exposed DP, optimizer.
std::string time_chart(const Prediction& pr);
// One row per pipeline rank; forward and backward steps coloured, micro-batches labelled where
// the step is wide enough to hold its number. Above kPipelineMaxRanks ranks it shows the first,
// middle and last ranks with the gaps marked; above kPipelineMaxSteps steps per rank each rank's
// steps are binned into phases (fill, warm-up, steady 1F1B, cool-down, flush) whose bars show the
// share of forward, backward, exposed communication and bubble. Always with a legend.
inline constexpr int64_t kPipelineMaxRanks = 16;
inline constexpr int64_t kPipelineMaxSteps = 64;
std::string pipeline_chart(const SimResult& sim, int64_t pp);
// The ranks pipeline_chart draws (all, or a representative subset in order); -1 marks a gap.
std::vector<int64_t> pipeline_rows(int64_t pp);
// TFLOP/s per GPU (at the ranking time) and days to train over GPU counts, the knee marked. The
// days axis is log10 when the days span more than a decade; `days_assumption` joins its title.
// With `intervals` (one per row, as rows), each curve has its prediction interval as a band:
// TFLOP/s / [high, low] ratio and days x [low, high] (a time's ratios; the bands are left out
// where an end is infinite).
std::string scaling_chart(const std::vector<CapacityRow>& rows, double price_per_gpu_hour_usd,
                          const std::string& days_assumption,
                          const std::vector<PredictionInterval>& intervals = {});

}  // namespace parallax
