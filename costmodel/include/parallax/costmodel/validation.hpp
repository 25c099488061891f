#pragma once
// Reproduces published training runs (validation/published_runs.json): predicts each row with the
// default profile of its cluster and compares in the convention the row's source used.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax {

// One published run, read strictly: the inputs to predict it and what was measured.
struct PublishedRun {
  std::string id;
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  PlanSpec plan;  // schedule 1f1b, vpp 1 where the source left it unpublished
  int64_t gpus = 0;
  std::string schedule_text;  // as published ("unpublished: ...", "none", "1f1b", ...)
  std::string convention;
  double measured_tflops_per_gpu = 0;
  double measured_iteration_time_s = 0;
};

std::vector<PublishedRun> read_published_runs(const nlohmann::json& runs, const std::string& source);

// The plans Megatron-LM could have run for a row: the published schedule, or where it is
// unpublished, 1F1B and interleaved 1F1B with every vpp dividing the stage's layers.
std::vector<PlanSpec> schedule_candidates(const PublishedRun& run);

struct ValidationRow {
  std::string id;
  std::string convention;  // "megatron_hw" or "model_mfu"
  std::string framework;
  double measured_tflops_per_gpu = 0;
  double predicted_tflops_per_gpu = 0;
  double measured_iteration_time_s = 0;  // 0 when the source gives none
  double predicted_iteration_time_s = 0;
  double error_pct = 0;  // (predicted - measured) / measured, in the row's convention
  PlanSpec plan;          // the plan predicted, with unpublished fields filled in
  std::string filled;     // which unpublished fields were chosen, and how
  bool fits = false;
  // The resolved inputs the prediction used, so the simulator can arrange the same costs.
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  EfficiencyProfile profile;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};

// profile_override: when set, used for every row instead of each cluster's default profile.
ValidationReport validate_runs(const nlohmann::json& runs, const std::string& source,
                               const std::optional<EfficiencyProfile>& profile_override);

}  // namespace parallax
