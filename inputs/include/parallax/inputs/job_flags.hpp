#pragma once
// The job and plan as text, the way the `parallax` flags and the GUI's fields hold them, and their
// resolution into validated specs. Every error is an InputError with source "command line" and the
// flag as its path, so the CLI and the GUI report bad input with the same one-line message.
#include <cstdint>
#include <optional>
#include <string>

#include "parallax/core/plan_file.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax {

// The job and plan flags as typed; the defaults are the MT-NLG 530B setting. An empty `gpus` is
// all of the cluster's GPUs; an empty `global_batch` (resolve only) one micro-batch per
// data-parallel rank, micro_batch * dp.
struct PlanOptions {
  std::string model = "mt-nlg-530b";
  std::string cluster = "dgx-a100-superpod";
  std::string nodes;  // the cluster at this many nodes; default: the preset's
  std::string gpus = "2240";
  std::string global_batch = "1920";
  std::string seq_len;  // tokens per sequence; empty = the model's
  std::string tp = "8";
  std::string pp = "35";
  std::string cp = "1";  // context-parallel size
  std::string ep = "1";   // expert-parallel size (mixture-of-experts models)
  std::string etp = "0";  // expert tensor-parallel size; 0 = tp
  std::string moe_dispatcher = "alltoall";  // MoE token dispatcher: alltoall | deepep | hybridep
  std::string vpp = "1";
  std::string microbatch_group = "0";  // interleaved: micro-batches per group; 0 = pp
  std::string mbs = "1";
  bool sp = false;
  std::string recompute = "full";
  std::string recompute_layers = "0";
  std::string zero = "0";
  // Uneven pipeline split (Megatron-LM --decoder-first/last-pipeline-num-layers): 0 = even.
  std::string first_stage_layers = "0";
  std::string last_stage_layers = "0";
  // Megatron-Core's embedding and loss counted as layers of the pipeline split.
  bool embedding_in_split = false;
  bool loss_in_split = false;
  std::string schedule;  // default: interleaved when vpp > 1, else 1f1b
  std::string order = "tp-dp-pp";
  std::string dtype = "bf16";
  std::string bytes_per_param = "18";
  std::string framework;  // the software stack; default: the profile's (EfficiencyProfile::default_stack)
  std::string attention_kernel;  // presets/attention/ name or file; default: the stack's per GPU
  std::string attention;         // "fused" or "unfused"; default: the stack's
  std::string tokens;
  std::string price;
  std::string profile;  // default: the cluster's profile
  bool operator==(const PlanOptions&) const = default;
};

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
