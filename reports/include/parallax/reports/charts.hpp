#pragma once
// The report's charts as inline SVG: where memory goes per pipeline stage, where time goes, how
// the pipeline fills (a Gantt of one simulated iteration), and where scaling stops paying.
#include <string>
#include <vector>

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
// the step is wide enough to hold its number.
std::string pipeline_chart(const SimResult& sim, int64_t pp);
// TFLOP/s per GPU and days to train over GPU counts, the knee marked.
std::string scaling_chart(const std::vector<CapacityRow>& rows);

}  // namespace parallax
