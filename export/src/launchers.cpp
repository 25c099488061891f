#include "parallax/export/launchers.hpp"

#include <cstdio>

#include "parallax/export/megatron.hpp"

namespace parallax {
namespace {

std::string host(const LaunchOptions& o, int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%03lld", static_cast<long long>(i + 1));
  return o.host_prefix + buf;
}

int64_t gpus_per_node_used(const PlanFile& f) {
  return f.gpus < f.cluster.gpus_per_node ? f.gpus : f.cluster.gpus_per_node;
}

std::string sbatch_header(const PlanFile& f, const LaunchOptions& o, int64_t tasks_per_node) {
  return "#!/usr/bin/env bash\n"
         "#SBATCH --job-name=" + o.job_name + "\n"
         "#SBATCH --nodes=" + std::to_string(plan_nodes(f)) + "\n"
         "#SBATCH --ntasks-per-node=" + std::to_string(tasks_per_node) + "\n"
         "#SBATCH --gpus-per-node=" + std::to_string(gpus_per_node_used(f)) + "\n"
         "#SBATCH --exclusive\n"
         "set -euo pipefail\n";
}

}  // namespace

int64_t plan_nodes(const PlanFile& f) {
  return (f.gpus + f.cluster.gpus_per_node - 1) / f.cluster.gpus_per_node;
}

std::string slurm_megatron_script(const PlanFile& f, const LaunchOptions& o) {
  std::string args = megatron_args_text(f);
  // Indent the continuation lines under the torchrun command.
  std::string indented;
  for (char c : args) {
    indented += c;
    if (c == '\n') indented += "    ";
  }
  while (!indented.empty() && (indented.back() == ' ' || indented.back() == '\n')) indented.pop_back();
  return sbatch_header(f, o, 1) +
         "# " + f.model.name + ": " + std::to_string(f.gpus) + " GPUs, tp " + std::to_string(f.plan.tp) +
         " x pp " + std::to_string(f.plan.pp) + " x dp " + std::to_string(f.plan.dp) + "\n"
         "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
         "MASTER_PORT=29500\n"
         "# One task per node; torchrun starts one process per GPU of its node.\n"
         "srun --ntasks-per-node=1 torchrun \\\n"
         "    --nnodes \"$SLURM_NNODES\" --nproc-per-node " + std::to_string(gpus_per_node_used(f)) + " \\\n"
         "    --rdzv-id \"$SLURM_JOB_ID\" --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" \\\n"
         "    pretrain_gpt.py \\\n    " + indented + "\n";
}

std::string slurm_parallax_script(const PlanFile& f, const LaunchOptions& o) {
  return sbatch_header(f, o, gpus_per_node_used(f)) +
         "# parallax run under Open MPI: one rank per GPU.\n"
         "mpirun -np " + std::to_string(f.gpus) + " --map-by ppr:" +
         std::to_string(gpus_per_node_used(f)) + ":node --bind-to none \\\n"
         "    parallax run --plan " + o.plan_path + "\n";
}

std::string mpirun_script(const PlanFile& f, const LaunchOptions& o) {
  std::string s = "#!/usr/bin/env bash\nset -euo pipefail\n"
                  "# Open MPI hostfile: one line per node, one slot per GPU.\n"
                  "cat > hostfile <<'HOSTS'\n";
  for (int64_t i = 0; i < plan_nodes(f); ++i) {
    s += host(o, i) + " slots=" + std::to_string(gpus_per_node_used(f)) + "\n";
  }
  s += "HOSTS\n"
       "mpirun --hostfile hostfile -np " + std::to_string(f.gpus) + " --map-by ppr:" +
       std::to_string(gpus_per_node_used(f)) + ":node --bind-to none \\\n"
       "    parallax run --plan " + o.plan_path + "\n";
  return s;
}

}  // namespace parallax
