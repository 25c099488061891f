#pragma once
// The plan file: one self-contained JSON document with model, cluster, job, GPU count and the
// parallel settings. `predict --out` and `plan --out` write it; the executor and exporters read it.
//   {"parallax_plan_version": 1, "model": {...}, "cluster": {...}, "gpus": N,
//    "job": {...}, "plan": {...}}
#include <string>

#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/dense_only.hpp"
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

nlohmann::json to_json(const PlanFile& f);
// Reads and validates (including validate_plan); source names the file in errors.
PlanFile read_plan_file(const nlohmann::json& j, const std::string& source,
                        MoeReader reader = MoeReader::dense_only);

}  // namespace parallax
