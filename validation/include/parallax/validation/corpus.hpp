#pragma once
// The validation corpus v2 (validation/runs/*.json, one file per public source; schema in
// validation/runs/README.md), read strictly into the inputs that predict each row. A row the cost
// model cannot express (context or expert parallelism, a GPU without a preset, a metric whose
// convention has no formula, ...) is kept as unsupported with the reason, never dropped silently.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

// What a row measured, in its source's own metric and convention.
struct Measurement {
  std::string metric;  // iteration_time_s, tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, hfu
  std::string convention;
  double value = 0;
};

// One published run, resolved: the inputs to predict it and what was measured.
struct PublishedRun {
  std::string id;
  std::string source;  // the corpus file's source id
  std::string group;   // leave-one-source-out holds a group out together (a source and re-runs of it)
  std::string stack;   // selects the stack's entry of the efficiency profile (job.framework)
  std::string gpu;     // GPU preset name
  std::string dtype;
  std::string sweep;   // rows differing only in the plan share it ("" = none)
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  PlanSpec plan;  // the published plan; unpublished fields hold a placeholder until filled
  int64_t gpus = 0;
  std::string schedule_text;  // as published ("unpublished: ...", "none", "1f1b", ...)
  // Plan fields the source left unpublished: validate fills each with the fastest setting the
  // stack could run and says which.
  bool free_micro_batch = false;
  bool free_recompute = false;
  bool free_sequence_parallel = false;
  bool free_vpp = false;
  // The row names the interleaved schedule but not vpp: only vpp > 1 is filled in.
  bool interleaved_only = false;
  std::vector<std::string> assumed;  // how the reader resolved what the row leaves open
  Measurement measured;              // the metric compared (the first one convertible to time)
  // The measured value as an iteration time, through the convention's formula (the error of any
  // throughput metric is measured_iteration_time_s / predicted - 1).
  double measured_iteration_time_s = 0;
  // The peak memory per GPU the source published (metric peak_memory_gib, e.g. PyTorch's
  // max_memory_reserved), in bytes; 0 = not published. Compared, never fitted.
  double measured_peak_memory_bytes = 0;
};

struct UnsupportedRun {
  std::string id;
  std::string source;
  std::string reason;
};

struct Corpus {
  std::vector<PublishedRun> runs;
  std::vector<UnsupportedRun> unsupported;
  std::vector<std::string> files;
  std::map<std::string, std::string> group_of_source;
};

// Reads corpus files and directories (every *.json in a directory, in name order). Bad input
// (a malformed file, a field breaking the schema, a duplicate id) throws InputError naming the
// file and the field.
Corpus read_corpus(const std::vector<std::string>& paths);

// FLOPs per iteration under a named formula of the corpus ("megatron_hw": Narayanan et al. 2021
// Eq. 3; "6n_attn" / "6n_attn_noembed": 6 N + 12 L h s per token with N all parameters, or all but
// the token embedding). Throws InputError for another name.
double formula_flops_per_iteration(const std::string& formula, const ModelSpec& m,
                                   int64_t global_batch, const std::string& source);

}  // namespace parallax
