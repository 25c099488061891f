#pragma once
// The job and plan as text, the way the `parallax` flags and the GUI's fields hold them, and their
// resolution into validated specs. Every error is an InputError with source "command line" and the
// flag as its path, so the CLI and the GUI report bad input with the same one-line message.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/plan_file.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax {

// Every plan field's flag default (plan_fields.hpp), in the fields' order.
std::vector<std::string> default_plan_values();
// Every job field's flag default (job_fields.hpp), in the fields' order.
std::vector<std::string> default_job_values();

// The job and plan flags as typed; the defaults are the MT-NLG 530B setting. An empty `gpus` is
// all of the cluster's GPUs; an empty global batch (resolve only) one micro-batch per
// data-parallel rank, micro_batch * dp.
struct PlanOptions {
  std::string model = "mt-nlg-530b";
  std::string cluster = "dgx-a100-superpod";
  std::string nodes;  // the cluster at this many nodes; default: the preset's
  std::string gpus = "2240";
  std::string seq_len;  // tokens per sequence; empty = the model's
  // The plan's fields as typed, one per entry of plan_fields() in its order: the field's
  // flag_default unless set, a switch's "true" or "false" ("": off), a derived field's unused.
  std::vector<std::string> plan = default_plan_values();
  // The value of the plan field at JSON key `key` (std::out_of_range for a key no field has).
  std::string& value(std::string_view key);
  const std::string& value(std::string_view key) const;
  // The job's fields as typed, one per entry of job_fields() in its order: the field's
  // flag_default unless set ("": absent; the stack's: the profile's default stack), a field
  // without a flag's unused.
  std::vector<std::string> job = default_job_values();
  // The value of the job field at JSON key `key` (std::out_of_range for a key no field has).
  std::string& job_value(std::string_view key);
  const std::string& job_value(std::string_view key) const;
  std::string profile;  // default: the cluster's profile
  bool operator==(const PlanOptions&) const = default;
};

// The job's flags in the order the CLI's help lists them: the job's fields that have a flag
// (job_fields.hpp: their flag, help and default are the field's) and the job's inputs that are no
// field (the model, the cluster and its size, the GPUs, the sequence length, the profile). The
// CLI's options (apps/plan_options.cpp), the recipe keys (the flag's name with '_' for '-',
// inputs/flag_file.cpp) and the flag an error names come from it.
struct JobOption {
  const char* flag;
  const char* alias;      // another spelling of the flag, or nullptr
  const char* help;
  bool show_default;      // the help shows the default
  const char* json_path;  // an input's value in the resolved file ("$.gpus"), or nullptr
  std::string PlanOptions::*input = nullptr;  // the input it fills, or
  const char* job_key = nullptr;              // the job field it sets
  // The text it fills in o.
  std::string& text(PlanOptions& o) const;
};
std::span<const JobOption> job_options();

struct Resolved {
  PlanFile file;
  EfficiencyProfile profile;
};

// Loads presets/files, applies the rules of JSON input and validate_plan; errors name the flag.
Resolved resolve(const PlanOptions& o);

// The job part only: model, cluster, GPU count, job and profile (no parallel settings).
struct ResolvedJob {
  ModelSpec model;
  ClusterSpec cluster;  // allocated for the job's GPUs: NVLink domains in its SLURM segments
  std::optional<ClusterSpec> whole_cluster;  // the cluster as given, when `cluster` is segmented
  JobSpec job;
  int64_t gpus = 0;
  EfficiencyProfile profile;
};
ResolvedJob resolve_job(const PlanOptions& o);
// The same with a model the caller already has (the GUI's custom shape); o.model is not read.
ResolvedJob resolve_job(const PlanOptions& o, const ModelSpec& model);

}  // namespace parallax
