#pragma once
// Launch files: a SLURM batch script (Megatron-LM through torchrun, or `parallax run` through
// mpirun) and an Open MPI hostfile + command for `parallax run`.
#include <cstdint>
#include <string>

#include "parallax/core/plan_file.hpp"

namespace parallax {

struct LaunchOptions {
  std::string plan_path = "plan.json";  // the plan file the launched job reads
  std::string job_name = "parallax";
  std::string host_prefix = "node";     // hostfile names: node001, node002, ...
  // Megatron-LM launches: where Megatron-LM is checked out (pretrain_gpt.py is run from there),
  // the data prefix (empty: Megatron's mock dataset) and the tokenizer model it was made with.
  std::string megatron_dir = "/opt/megatron-lm";
  std::string data_path;
  std::string tokenizer_model;
  // A benchmark launch (plan --shortlist): this many iterations, each one logged; 0 = a training
  // launch (the plan's tokens, else a measurement run of 100 iterations).
  int64_t benchmark_iters = 0;
  // SLURM: empty = the cluster's default.
  std::string partition, account, time_limit, container_image;
};

// Hosts the plan needs on its cluster (GPUs / GPUs per host, rounded up): what SLURM and mpirun
// call nodes, several per node of the plan where an NVLink domain spans hosts (GB200 NVL72).
int64_t plan_hosts(const PlanFile& f);

// Why `parallax run` cannot run the plan (its stack's capability table,
// presets/stacks/parallax-executor.json): "rule (path)", or "" when it can.
std::string parallax_run_refusal(const PlanFile& f);

std::string slurm_megatron_script(const PlanFile& f, const LaunchOptions& o);
// Megatron-DeepSpeed (megatron_deepspeed.hpp): the script writes the plan's DeepSpeed config
// beside itself, then runs $MEGATRON_DIR/pretrain_gpt.py under torchrun on every node.
std::string slurm_megatron_deepspeed_script(const PlanFile& f, const LaunchOptions& o);
std::string slurm_parallax_script(const PlanFile& f, const LaunchOptions& o);
std::string mpirun_script(const PlanFile& f, const LaunchOptions& o);

}  // namespace parallax
