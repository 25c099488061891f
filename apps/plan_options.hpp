#pragma once
// The model / cluster / job / plan flags shared by predict (and later simulate and plan), and their
// resolution into validated specs.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "parallax/core/plan_file.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/planner/search_space.hpp"

namespace parallax::cli {

struct PlanOptions {
  std::string model = "mt-nlg-530b";
  std::string cluster = "dgx-a100-superpod";
  std::string gpus = "2240";
  std::string global_batch = "1920";
  std::string tp = "8";
  std::string pp = "35";
  std::string vpp = "1";
  std::string mbs = "1";
  bool sp = false;
  std::string recompute = "full";
  std::string recompute_layers = "0";
  std::string zero = "0";
  std::string schedule;  // default: interleaved when vpp > 1, else 1f1b
  std::string order = "tp-dp-pp";
  std::string dtype = "bf16";
  std::string bytes_per_param = "18";
  std::string framework = "megatron-lm";
  std::string tokens;
  std::string price;
  std::string profile;  // default: the cluster's profile
};

// All flags (job + parallel settings), as predict and simulate take them.
void add_plan_options(CLI::App& app, PlanOptions& o);
// Only the model / cluster / GPUs / job / profile flags, as plan and capacity take them.
void add_job_options(CLI::App& app, PlanOptions& o, bool with_gpus = true);

// Search-space restrictions shared by plan and capacity.
struct SearchFlags {
  std::string recompute_allowed = "none,selective,full";
  bool no_sp = false;
  bool allow_cross_node_tp = false;
  bool allow_all = false;
};
void add_search_flags(CLI::App& app, SearchFlags& f);
SearchOptions search_options(const SearchFlags& f);

struct Resolved {
  PlanFile file;
  EfficiencyProfile profile;
};

// Loads presets/files, applies the rules of JSON input and validate_plan; errors name the flag.
Resolved resolve(const PlanOptions& o);

// The job part only: model, cluster, GPU count, job and profile (no parallel settings).
struct ResolvedJob {
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  int64_t gpus = 0;
  EfficiencyProfile profile;
};
ResolvedJob resolve_job(const PlanOptions& o);

}  // namespace parallax::cli
