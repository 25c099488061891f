#include "parallax/export/launchers.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "parallax/core/error.hpp"
#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/export/deepspeed.hpp"
#include "parallax/export/megatron.hpp"
#include "parallax/export/megatron_deepspeed.hpp"
#include "launch_common.hpp"

namespace parallax {
namespace {

std::string host(const LaunchOptions& o, int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%03lld", static_cast<long long>(i + 1));
  return o.host_prefix + buf;
}

}  // namespace

namespace launch_common {

int64_t gpus_per_host_used(const PlanFile& f) {
  return f.gpus < f.cluster.host_gpus() ? f.gpus : f.cluster.host_gpus();
}

namespace {

// When an NVLink domain spans hosts, the plan assumes each domain's hosts are consecutive. A job
// inside one domain is one segment of its own hosts; a job over several takes them in the segments
// the plan's cluster says (with_job_segments: whole domains, or the largest part of one that
// divides the job's hosts), and SLURM wants a segment that divides the job's hosts.
std::string nvlink_domain_note(const PlanFile& f) {
  const int64_t per_domain = std::min(f.cluster.gpus_per_node / f.cluster.host_gpus(), plan_hosts(f));
  if (per_domain <= 1) return "";
  return "# One NVLink domain of the plan is " + std::to_string(per_domain) + " hosts of " +
         std::to_string(f.cluster.host_gpus()) + " GPUs, and the plan puts consecutive ranks in one\n"
         "# domain: allocate whole domains, in order (with SLURM's topology/block plugin, one block per\n"
         "# domain: add #SBATCH --segment=" + std::to_string(per_domain) + ").\n";
}

}  // namespace

std::string sbatch_header(const PlanFile& f, const LaunchOptions& o, int64_t tasks_per_node) {
  std::string h = "#!/usr/bin/env bash\n"
                  "#SBATCH --job-name=" + o.job_name + "\n"
                  "#SBATCH --nodes=" + std::to_string(plan_hosts(f)) + "\n"
                  "#SBATCH --ntasks-per-node=" + std::to_string(tasks_per_node) + "\n"
                  "#SBATCH --gpus-per-node=" + std::to_string(gpus_per_host_used(f)) + "\n"
                  "#SBATCH --exclusive\n";
  if (!o.partition.empty()) h += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) h += "#SBATCH --account=" + o.account + "\n";
  if (!o.time_limit.empty()) h += "#SBATCH --time=" + o.time_limit + "\n";
  // A benchmark's log, in the directory it is submitted from (beside its plan.json, which
  // plan --measured reads it with).
  if (o.benchmark_iters > 0) h += "#SBATCH --output=benchmark-%j.log\n";
  return h + "set -euo pipefail\n" + nvlink_domain_note(f);
}

// srun's step options: every CPU of the node to the task (a step task gets one CPU otherwise,
// and torchrun's workers would share it), the whole job ended when one task fails, and the
// container (pyxis) when one is named.
std::string srun_options(const LaunchOptions& o) {
  std::string s = "--ntasks-per-node=1 --cpus-per-task=\"$SLURM_CPUS_ON_NODE\" --kill-on-bad-exit=1";
  if (!o.container_image.empty()) s += " --container-image=" + o.container_image;
  return s;
}

}  // namespace launch_common

namespace {

using launch_common::gpus_per_host_used;
using launch_common::sbatch_header;
using launch_common::srun_options;

// Megatron-LM's validate_args (megatron/training/arguments.py) asserts
// CUDA_DEVICE_MAX_CONNECTIONS=1 when tp or cp > 1 before Blackwell (compute capability < 10),
// and that it is not 1 under Megatron FSDP (then it only warns about tp).
std::string megatron_environment(const PlanFile& f) {
  const bool fsdp = f.plan.zero >= 2;
  const std::optional<int> major = compute_capability_major(f.cluster.gpu);
  const bool before_blackwell = major && *major < 10;
  if (fsdp) return "# Megatron FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset or above 1.\nunset CUDA_DEVICE_MAX_CONNECTIONS\n";
  if ((f.plan.tp > 1 || f.plan.cp > 1) && before_blackwell)
    return "# Megatron-LM requires one hardware queue with tensor or context parallelism before Blackwell.\n"
           "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  return "";
}

// The rendezvous and one torchrun per node running $MEGATRON_DIR/pretrain_gpt.py with `args`, one
// argument per line under it.
std::string torchrun_pretrain_gpt(const PlanFile& f, const LaunchOptions& o,
                                  const std::vector<std::string>& args) {
  std::string indented;
  for (char c : args_text(args)) {
    indented += c;
    if (c == '\n') indented += "    ";
  }
  while (!indented.empty() && (indented.back() == ' ' || indented.back() == '\n')) indented.pop_back();
  return "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
         "MASTER_PORT=29500\n"
         "# One task per node; torchrun starts one process per GPU of its node.\n"
         "srun " + srun_options(o) + " torchrun \\\n"
         "    --nnodes \"$SLURM_NNODES\" --nproc-per-node " + std::to_string(gpus_per_host_used(f)) + " \\\n"
         "    --rdzv-id \"$SLURM_JOB_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
         "    \"$MEGATRON_DIR/pretrain_gpt.py\" \\\n    " + indented + "\n";
}

}  // namespace

std::string parallax_run_refusal(const PlanFile& f) {
  JobSpec executor = f.job;
  executor.framework = "parallax-executor";
  executor.capabilities = load_stack("parallax-executor").capabilities;
  const auto r = stack_refusal(f.model, executor, f.plan);
  return r ? r->rule + " (" + r->path + ")" : "";
}

int64_t plan_hosts(const PlanFile& f) {
  return (f.gpus + f.cluster.host_gpus() - 1) / f.cluster.host_gpus();
}

std::string slurm_megatron_script(const PlanFile& f, const LaunchOptions& o) {
  const std::vector<std::string> args = megatron_args(f, {o.data_path, o.tokenizer_model, o.benchmark_iters});
  return sbatch_header(f, o, 1) +
         "# " + f.model.name + ": " + std::to_string(f.gpus) + " GPUs, tp " + std::to_string(f.plan.tp) +
         " x pp " + std::to_string(f.plan.pp) + " x dp " + std::to_string(f.plan.dp) + "\n"
         "# Parallax planned the parallel layout and batch; the data, tokenizer, learning-rate\n"
         "# schedule and iteration count below are placeholders: " +
         (o.data_path.empty() ? "no --data was given, so Megatron's mock dataset (random tokens) is used;\n# "
                              : "data " + o.data_path + ";\n# ") +
         (f.job.tokens > 0 ? "--train-iters from the plan's tokens." : "no --tokens: 100 iterations, a measurement run.") +
         " Check them before training.\n"
         "MEGATRON_DIR=" + o.megatron_dir + "\n" + megatron_environment(f) +
         torchrun_pretrain_gpt(f, o, args);
}

std::string slurm_megatron_deepspeed_script(const PlanFile& f, const LaunchOptions& o) {
  const std::string ds_config = "\"$SLURM_SUBMIT_DIR/ds_config_$SLURM_JOB_ID.json\"";
  const std::vector<std::string> args =
      megatron_deepspeed_args(f, {o.data_path, o.tokenizer_model, o.benchmark_iters}, ds_config);
  // megatron/arguments.py of Megatron-DeepSpeed raises unless CUDA_DEVICE_MAX_CONNECTIONS=1 with
  // sequence parallelism (with --deepspeed it turns the async TP all-reduce off otherwise).
  const std::string env = f.plan.sequence_parallel
                              ? "# Megatron-DeepSpeed requires one hardware queue with sequence parallelism.\n"
                                "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
                              : "";
  return sbatch_header(f, o, 1) +
         "# " + f.model.name + ": " + std::to_string(f.gpus) + " GPUs, tp " + std::to_string(f.plan.tp) +
         " x pp " + std::to_string(f.plan.pp) + " x dp " + std::to_string(f.plan.dp) + ", ZeRO " +
         std::to_string(f.plan.zero) + "\n"
         "# Parallax planned the parallel layout and batch; the learning-rate schedule and iteration\n"
         "# count are placeholders, and without --data/--tokenizer the script stops until DATA_PATH\n"
         "# and TOKENIZER_MODEL are set (Megatron-DeepSpeed has no mock dataset).\n"
         "MEGATRON_DIR=" + o.megatron_dir + "  # a Megatron-DeepSpeed checkout\n" + env +
         "cat > " + ds_config + " <<'DSCONFIG'\n" + deepspeed_config(f).dump(2) + "\nDSCONFIG\n" +
         torchrun_pretrain_gpt(f, o, args);
}

namespace {

// What `parallax run` needs around mpirun: the executor must run the plan (its stack's
// capability table, presets/stacks/parallax-executor.json), and on GPUs the CUDA backend, whose
// streams need CUDA_DEVICE_MAX_CONNECTIONS unset or >= 7 (Megatron containers set 1), passed to
// every rank with -x. `format` names the export in a refusal.
struct ParallaxRun {
  std::string environment, mpirun_env, command;
};

ParallaxRun parallax_run(const PlanFile& f, const LaunchOptions& o, const char* format) {
  if (const std::string why = parallax_run_refusal(f); !why.empty())
    throw InputError("export", format, "parallax run cannot run this plan: " + why);
  const bool gpu = compute_capability_major(f.cluster.gpu).has_value();
  // A benchmark: its steps, and the measurements plan --measured reads, beside the plan.
  const std::string bench = o.benchmark_iters > 0
                                ? " --steps " + std::to_string(o.benchmark_iters) + " --out measurements.json"
                                : "";
  if (!gpu) return {"", "", "parallax run --plan " + o.plan_path + bench};
  return {"# The CUDA backend runs up to 7 streams per rank: one hardware queue each.\n"
          "export CUDA_DEVICE_MAX_CONNECTIONS=8\n",
          "-x CUDA_DEVICE_MAX_CONNECTIONS ", "parallax run --backend cuda --plan " + o.plan_path + bench};
}

}  // namespace

std::string slurm_parallax_script(const PlanFile& f, const LaunchOptions& o) {
  const ParallaxRun run = parallax_run(f, o, "--launcher parallax");
  return sbatch_header(f, o, gpus_per_host_used(f)) + run.environment +
         "# parallax run under Open MPI: one rank per GPU.\n"
         "mpirun -np " + std::to_string(f.gpus) + " --map-by ppr:" +
         std::to_string(gpus_per_host_used(f)) + ":node --bind-to none " + run.mpirun_env + "\\\n"
         "    " + run.command + "\n";
}

std::string mpirun_script(const PlanFile& f, const LaunchOptions& o) {
  const ParallaxRun run = parallax_run(f, o, "--format mpirun");
  std::string s = "#!/usr/bin/env bash\nset -euo pipefail\n" + run.environment +
                  "# Open MPI hostfile: one line per node, one slot per GPU.\n"
                  "cat > hostfile <<'HOSTS'\n";
  for (int64_t i = 0; i < plan_hosts(f); ++i) {
    s += host(o, i) + " slots=" + std::to_string(gpus_per_host_used(f)) + "\n";
  }
  s += "HOSTS\n"
       "mpirun --hostfile hostfile -np " + std::to_string(f.gpus) + " --map-by ppr:" +
       std::to_string(gpus_per_host_used(f)) + ":node --bind-to none " + run.mpirun_env + "\\\n"
       "    " + run.command + "\n";
  return s;
}

}  // namespace parallax
