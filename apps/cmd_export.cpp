// parallax export: launch files for a plan — Megatron-LM arguments, a DeepSpeed config, a SLURM
// batch script, an Open MPI hostfile and command, or a TorchTitan job config and its launch.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/export/export_text.hpp"

namespace parallax::cli {
namespace {

struct ExportArgs {
  std::string plan;
  std::string format;
  std::string out;
  std::string launcher = "megatron";  // slurm: which program the script starts
  LaunchOptions launch;
};

void run_export(const ExportArgs& a) {
  const PlanFile f = read_plan_file(read_json_file(a.plan), a.plan);
  LaunchOptions lo = a.launch;
  lo.plan_path = a.plan;
  const std::string text = export_text(f, a.format, lo, a.launcher);
  if (a.out.empty()) {
    std::cout << text;
  } else {
    write_file_atomic(a.out, text);
  }
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* sub =
      app.add_subcommand("export", "launch files for a plan (Megatron-LM, DeepSpeed, SLURM, mpirun, TorchTitan)");
  sub->add_option("--plan", args->plan, "plan file (from plan --out or predict --out)")->required();
  sub->add_option("--format", args->format,
                  "megatron | deepspeed | slurm | mpirun | megatron-deepspeed (a SLURM script with "
                  "its DeepSpeed config) | torchtitan (a TorchTitan v0.2.2 TOML job config) | torchtitan-launch "
                  "(a script that writes it and runs torchrun -m torchtitan.train; srun when it spans hosts)")
      ->required()
      ->check(CLI::IsMember({"megatron", "deepspeed", "slurm", "mpirun", "megatron-deepspeed", "torchtitan",
                             "torchtitan-launch"}));
  sub->add_option("--launcher", args->launcher, "slurm only: megatron (torchrun) | parallax (mpirun)")
      ->check(CLI::IsMember({"megatron", "parallax"}))
      ->capture_default_str();
  sub->add_option("--out", args->out, "write to this file (atomically) instead of stdout");
  sub->add_option("--megatron-dir", args->launch.megatron_dir, "slurm: where Megatron-LM is checked out")
      ->capture_default_str();
  sub->add_option("--data", args->launch.data_path,
                  "megatron/slurm: Megatron data prefix (default: --mock-data, random tokens); torchtitan: "
                  "a local copy of C4 (dataset c4 at this dataset_path; default: its c4_test data)");
  sub->add_option("--tokenizer", args->launch.tokenizer_model,
                  "megatron/slurm: Hugging Face tokenizer the data was made with (needed with --data); "
                  "torchtitan: its hf_assets_path (default: its test tokenizer)");
  // torchtitan-launch writes a SLURM batch script when the plan spans hosts.
  sub->add_option("--partition", args->launch.partition, "slurm: #SBATCH --partition");
  sub->add_option("--account", args->launch.account, "slurm: #SBATCH --account");
  sub->add_option("--time", args->launch.time_limit, "slurm: #SBATCH --time (e.g. 2-00:00:00)");
  sub->add_option("--container-image", args->launch.container_image, "slurm: srun --container-image (pyxis)");
  sub->callback([args] { run_export(*args); });
}

}  // namespace parallax::cli
