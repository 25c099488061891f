#pragma once
// Human-readable prediction: throughput, time breakdown and per-stage memory. Shared by predict,
// plan (the winner) and later simulate.
#include <string>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/predict.hpp"

namespace parallax::cli {

// "model / cluster / job" lines describing what was asked.
std::string inputs_header(const ModelSpec& m, const ClusterSpec& c, int64_t gpus, const JobSpec& j,
                          const std::string& profile);
// With an interval, each figure's range at its level beside it.
std::string throughput_table(const Prediction& pr, const PredictionInterval* iv = nullptr);
// What an interval rests on: its rows, the features they share with the job, those given up.
std::string interval_note(const PredictionInterval& iv);
std::string time_table(const Prediction& pr);
std::string memory_section(const Prediction& pr, const PlanSpec& p);

}  // namespace parallax::cli
