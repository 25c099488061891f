#pragma once
// Predicts the runs of the validation corpus (corpus.hpp) and compares each with what its source
// measured, in the source's own metric. Where a row leaves a plan field unpublished, the prediction
// uses the fastest setting the stack could run (that fits, when one does) and says which.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/costmodel/plan_ops.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/topologies/topology.hpp"
#include "parallax/validation/corpus.hpp"

namespace parallax {

// One cluster graph per (cluster, node count): predictions of many rows and profiles share its
// memoised plan analyses.
class TopologyCache {
 public:
  const Topology& get(const ClusterSpec& c);

 private:
  std::map<std::string, std::unique_ptr<Topology>> graphs_;
};

// The plans a row could have run: the published fields as published, each unpublished one
// (micro-batch, recompute, sequence parallelism, vpp) over what the stack could run.
std::vector<PlanSpec> plan_candidates(const PublishedRun& run);

struct ValidationRow {
  std::string id, source, group, stack, gpu, dtype, sweep;
  Measurement measured;
  double predicted_value = 0;  // in the measured metric
  double measured_iteration_time_s = 0;
  double predicted_iteration_time_s = 0;
  // Predicted throughput against measured, in percent: measured time / predicted time - 1 (the
  // same for every throughput metric of the row; for an iteration time, its throughput).
  double error_pct = 0;
  PlanSpec plan;       // the plan predicted, unpublished fields filled
  std::string filled;  // which unpublished fields were chosen, and what the reader assumed
  bool fits = false;
  // Peak memory per GPU: the most loaded stage's bytes as predicted (without the profile's
  // reserve), and as the source published it (0 = not published).
  double predicted_peak_memory_bytes = 0;
  double measured_peak_memory_bytes = 0;
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  EfficiencyProfile profile;
};

// The row's prediction with this plan (no choosing): the fit's inner loop.
ValidationRow predict_run(const PublishedRun& run, const PlanSpec& plan,
                          const EfficiencyProfile& prof, TopologyCache& topos);
// plan_candidates that pass the plan rules (throws InputError when none does).
std::vector<PlanSpec> valid_candidates(const PublishedRun& run);
// The fastest of the candidates (fitting ones first) under prof, without the fill description.
ValidationRow best_candidate(const PublishedRun& run, const std::vector<PlanSpec>& candidates,
                             const EfficiencyProfile& prof, TopologyCache& topos);
// A row's candidate plans (valid_candidates), each with its op lists built once (plan_ops), on
// its cluster's graph: what a fit prices under every profile it tries.
struct PreparedRow {
  const PublishedRun* run = nullptr;
  const Topology* topo = nullptr;  // owned by the TopologyCache it was prepared with
  std::vector<PlanSpec> plans;
  std::vector<PlanOps> ops;
};
PreparedRow prepare_row(const PublishedRun& run, TopologyCache& topos);
// best_candidate's choice under prof, reduced to what a fit reads: its error_pct.
double best_candidate_error_pct(const PreparedRow& row, const EfficiencyProfile& prof);
// The fastest candidate plan (fitting ones first) under prof.
ValidationRow validate_run(const PublishedRun& run, const EfficiencyProfile& prof,
                           TopologyCache& topos);

struct ErrorSummary {
  size_t rows = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};
ErrorSummary summarize(const std::vector<ValidationRow>& rows);
// The rows with a published peak memory: predicted / published - 1, in percent.
ErrorSummary summarize_memory(const std::vector<ValidationRow>& rows);

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<UnsupportedRun> unsupported;
  ErrorSummary summary;
};

// Every supported row with its cluster's profile, or profile_override for all of them.
ValidationReport validate_corpus(const Corpus& corpus,
                                 const std::optional<EfficiencyProfile>& profile_override);

}  // namespace parallax
