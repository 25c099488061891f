#pragma once
// The planner: enumerate -> rule filter -> analytic prediction of every admitted plan (threads
// over the cores) -> memory filter -> rank by iteration time (ties: more headroom first) ->
// refine the top k with a slower, more faithful evaluator (the event simulator) and re-rank.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/planner/search_space.hpp"
#include "parallax/topologies/topology.hpp"

namespace parallax {

struct PlannerInputs {
  ModelSpec model;
  ClusterSpec cluster;  // the job's allocation: NVLink domains of several hosts in its segments
  // The cluster as given, when `cluster` is its NVLink domains taken in the job's SLURM segments
  // (with_job_segments): other GPU counts (capacity sweeps, a report's scaling curve) are
  // segmented from it, not from this job's segments.
  std::optional<ClusterSpec> whole_cluster;
  const ClusterSpec& given_cluster() const { return whole_cluster ? *whole_cluster : cluster; }
  JobSpec job;
  int64_t gpus = 0;
  EfficiencyProfile profile;
  SearchOptions options;
  int64_t top_k = 32;
  int threads = 0;  // 0 = hardware concurrency
};

struct RankedPlan {
  PlanSpec plan;
  Prediction prediction;
  double time_s = 0;  // ranking time: the refined time when refined, else the analytic one
  bool refined = false;
  double headroom_bytes() const {
    return prediction.capacity_bytes - prediction.peak_bytes - prediction.reserve_bytes;
  }
  // Multiplies the prediction's throughput figures to give them at the ranking time (the
  // simulator's, when refined), as the plan tables show them.
  double throughput_scale() const { return prediction.iteration_time_s / time_s; }
};

// The ranking rule of every list of plans (the search, its refined top, sensitivity): the shorter
// time first; times equal within a part per billion are a tie, which the plan with more memory
// headroom wins.
bool ranks_before(const RankedPlan& a, const RankedPlan& b);

struct SearchResult {
  std::vector<RankedPlan> plans;  // every plan that fits, best first
  int64_t considered = 0;
  int64_t evaluated = 0;  // admitted plans predicted
  std::map<std::string, int64_t> rejected_by_rule;
  std::map<std::string, int64_t> rejected_by_reason;
  std::optional<RankedPlan> closest;  // when nothing fits: the admitted plan nearest to fitting
  // With SearchOptions::record_candidates: the rule-rejected candidates, and the admitted plans
  // that do not fit in memory, with their predictions.
  std::vector<RejectedPlan> rejected;
  std::vector<RankedPlan> unfit;
  double search_time_s = 0;
};

// Returns a refined iteration time for a plan (e.g. from the event simulator).
using Refiner = std::function<double(const PlanSpec&, const Prediction&)>;
// Called from the calling thread about every 100 ms with (done, total).
using Progress = std::function<void(int64_t, int64_t)>;

inline constexpr const char* kMemoryRule = "fits-in-memory";

// Builds the cluster's Topology once and predicts every admitted plan on it.
SearchResult search_plans(const PlannerInputs& in, const Refiner& refine = {},
                          const Progress& progress = {});
// The same on a Topology the caller already built (it must be of in.cluster).
SearchResult search_plans(const PlannerInputs& in, const Topology& topo, const Refiner& refine = {},
                          const Progress& progress = {});

// Why `a` is faster than `b`: the time parts that differ most, and the plan fields that differ.
std::string explain_difference(const RankedPlan& a, const RankedPlan& b);

}  // namespace parallax
