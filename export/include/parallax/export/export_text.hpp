#pragma once
// The text of one export format, as `parallax export --format F` writes it and the GUI saves it.
#include <string>

#include "parallax/core/plan_file.hpp"
#include "parallax/export/launchers.hpp"

namespace parallax {

// format: megatron | deepspeed | slurm | mpirun | megatron-deepspeed | torchtitan (a TorchTitan job
// config, torchtitan.hpp) | torchtitan-launch (a script that writes it and runs it).
// slurm_launcher: megatron (torchrun) | parallax (mpirun). Throws InputError("export", "--format",
// reason) for an unknown format and for what the format's trainer cannot run.
std::string export_text(const PlanFile& f, const std::string& format, const LaunchOptions& o,
                        const std::string& slurm_launcher = "megatron");

}  // namespace parallax
