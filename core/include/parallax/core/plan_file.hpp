#pragma once
// The plan file: one self-contained JSON document with model, cluster, job, GPU count and the
// parallel settings. `predict --out` and `plan --out` write it; the executor and exporters read it.
//   {"parallax_plan_version": 1, "model": {...}, "cluster": {...}, "gpus": N,
//    "job": {...}, "plan": {...}}
// `plan --measured --out` adds what the plan is expected to take, measured, with its interval:
//   "expected": {"iteration_time_s": T, "interval": {"level": L, "iteration_time_s": [lo, hi],
//                "basis": ["measured: ...", ...]}}
// which readers check (lo <= T <= hi, all positive, L in (0, 1)) and then leave: a plan file runs,
// exports and predicts the same with or without it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

inline constexpr int kPlanFileVersion = 1;

struct PlanFile {
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  PlanSpec plan;
  int64_t gpus = 0;
};

// What a plan is expected to take, and how sure that is (docs/predict.md, the shortlist).
struct PlanExpectation {
  double iteration_time_s = 0;
  double level = 0;
  double low_s = 0, high_s = 0;
  std::vector<std::string> basis;
};

nlohmann::json to_json(const PlanFile& f);
// The plan file with its "expected" block.
nlohmann::json to_json(const PlanFile& f, const PlanExpectation& expected);
// Reads and validates (including validate_plan); source names the file in errors.
PlanFile read_plan_file(const nlohmann::json& j, const std::string& source);

}  // namespace parallax
