#pragma once
// How sure a prediction is: the corpus rows predicted out of sample (leave one source out), kept
// as data (presets/residuals/corpus.json, written by `parallax fit --residuals`), and the
// prediction interval they give a job (docs/predict.md, docs/design.md §4).
//
// A row's residual is r = ln(measured / predicted iteration time). Errors are mostly a source's
// own (its stack's version, its cluster): the rows of one source err together, so a new job is
// like a new source, and the sources, not the rows, are the exchangeable units. The interval of a
// job at level L is predicted x exp([r_lo, r_hi]), the conformal ends over the n sources
// comparable to it (Barber, Candes, Ramdas and Tibshirani 2021, "Predictive inference with the
// jackknife+", one fold per source): each source weighs 1 / (n + 1), split evenly over its rows,
// and the new job's own 1 / (n + 1) sits at the far end, so r_hi is the smallest residual with
// (1 + L) / 2 of the weight at or below it, r_lo the mirror; with one row per source, the order
// statistics floor((n + 1)(1 - L) / 2) and ceil((n + 1)(1 + L) / 2). Finite only from
// n >= (1 + L) / (1 - L) sources, 9 at 80%. Comparable rows share the job's features (Vovk's
// Mondrian groups); where too few sources do, the least telling feature is given up first
// (scale, then sequence length, precision, context parallelism, stack, GPU generation, sharding,
// dense or MoE), and the interval says which it gave up.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

class JsonObjectReader;

// What makes one job's error like another's.
struct JobFeatures {
  std::string stack;  // job.framework
  std::string arch;   // the GPU's compute capability ("sm90"), or its name where it has none
  bool moe = false;
  bool sharded = false;  // ZeRO-3 / FSDP as the stack runs the plan (zero_stage_run)
  bool cp = false;       // context parallelism
  bool fp8 = false;
  int64_t seq_len = 0;
  int64_t gpus = 0;
};
JobFeatures job_features(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p);

// One corpus row predicted out of sample.
struct ResidualRow {
  std::string id, source, group, sweep;  // group: what leave-one-source-out held out with it
  JobFeatures features;
  double predicted_iteration_time_s = 0;
  double measured_iteration_time_s = 0;
  double residual() const;  // ln(measured / predicted)
};

struct ResidualTable {
  std::string source;  // how it was made
  std::vector<ResidualRow> rows;
};
ResidualTable read_residuals(JsonObjectReader& r);
nlohmann::json to_json(const ResidualTable& t);
// The committed table (presets/residuals/corpus.json).
ResidualTable load_residuals();

struct PredictionInterval {
  double level = 0;
  // Measured over predicted iteration time at the interval's ends.
  double low_ratio = 1, high_ratio = 1;
  size_t rows = 0;                   // the comparable rows it rests on
  size_t sources = 0;                // the sources they come from
  std::vector<std::string> basis;    // the features they share with the job ("dense", "GPU sm90", ...)
  std::vector<std::string> dropped;  // the job's features given up for too few rows, least telling last
  size_t needed = 0;                 // sources a finite interval at this level needs
};

// The interval at `level` (in (0, 1)) for a job with features f, from the rows of `t` not of
// group `exclude_group` (empty: every row). Every row counts at the last fallback, so only a
// table of fewer than `needed` sources leaves it infinite (low_ratio 0, high_ratio infinity).
PredictionInterval prediction_interval(const ResidualTable& t, const JobFeatures& f, double level,
                                       const std::string& exclude_group = "");

// Honest ties. Two plans of one job share most of their error (GPU, stack, model), so whether
// one beats the other is a question about the error of the ratio of their times: over the pairs
// of rows of one sweep of the corpus (one source, one job, several plans), d = r_A - r_B =
// ln(m_A / m_B) - ln(p_A / p_B). The ratio error at level L is the conformal quantile of |d| over
// the sweeps, each weighing 1 / (n + 1) split over its pairs (one-sided: finite from
// L / (1 - L) sweeps, 4 at 80%). A plan whose predicted time is within exp(that) of the winner's
// is tied with it: at level L the corpus cannot say which of the two is faster.
struct TieRule {
  double level = 0;
  double log_ratio = 0;  // infinity where too few sweeps
  size_t pairs = 0, sweeps = 0, needed = 0;
  // Whether a plan predicted at time_s is tied with the winner, predicted at winner_time_s.
  bool tied(double time_s, double winner_time_s) const;
};
// From the sweeps of `t` not of group `exclude_group` (empty: every sweep).
TieRule tie_rule(const ResidualTable& t, double level, const std::string& exclude_group = "");

// The rule's constants, for the text that explains an interval.
inline constexpr double kDefaultIntervalLevel = 0.8;

}  // namespace parallax
