#pragma once
// Pieces of the SLURM and torchrun launches (launchers.cpp) that other launches (torchtitan.cpp)
// share. Internal to the export library.
#include <cstdint>
#include <string>

#include "parallax/core/plan_file.hpp"
#include "parallax/export/launchers.hpp"

namespace parallax::launch_common {

// GPUs per host: a host is what SLURM, torchrun and mpirun call a node; a node of the plan (an
// NVLink domain) may span several (GB200 NVL72: 18 hosts of 4 GPUs).
int64_t gpus_per_host_used(const PlanFile& f);

// The batch script's #SBATCH lines (nodes, tasks and GPUs per node, the options' partition,
// account and time), `set -euo pipefail` and, where an NVLink domain spans hosts, the note on
// allocating whole domains.
std::string sbatch_header(const PlanFile& f, const LaunchOptions& o, int64_t tasks_per_node);

// srun's step options: every CPU of the node to the task, the whole job ended when one task
// fails, and the container (pyxis) when one is named.
std::string srun_options(const LaunchOptions& o);

}  // namespace parallax::launch_common
