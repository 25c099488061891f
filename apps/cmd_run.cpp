// parallax run --plan plan.json [--steps S] [--data FILE] [--out measurements.json]
//   [--trace trace.json] [--checkpoint-dir DIR] [--resume | --resume-if-present]: runs the plan
//   for real under mpirun.
#include <memory>

#include "blas_env.hpp"
#include "commands.hpp"
#include "parallax/executor/run.hpp"

namespace parallax::cli {

namespace {

int run_command(const exec::RunOptions& o) {
  return run_as_mpi_rank([&](int) { exec::run_plan(o); });
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<exec::RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a plan for real: mpirun -np N parallax run --plan plan.json");
  cmd->add_option("--plan", o->plan_path, "plan file (parallax predict --out)")->required();
  cmd->add_option("--backend", o->backend,
                  "cpu (fp32, BLAS, MPI) or cuda (bf16 with fp32 master weights, cuBLAS, NCCL; "
                  "one GPU per rank)");
  cmd->add_option("--steps", o->steps, "training steps")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--data", o->data_path, "token file: raw uint16 or llm.c format (default: synthetic)");
  cmd->add_option("--out", o->out_path, "measurements.json");
  cmd->add_option("--trace", o->trace_path, "Chrome trace (chrome://tracing, Perfetto)");
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir, "directory of checkpoints (saved at the end)");
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "also save every N steps");
  cmd->add_flag("--resume", o->resume,
                "continue from the newest complete checkpoint of this model (none there: exit 2)");
  cmd->add_flag("--resume-if-present", o->resume_if_present,
                "as --resume when the directory holds one, else start fresh (requeued jobs)");
  cmd->add_option("--seed", o->seed, "seed of initialisation and synthetic data");
  cmd->add_option("--lr", o->lr, "AdamW learning rate")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--grad-clip", o->grad_clip, "global gradient-norm clip (0 = off)")->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--threads", o->threads, "threads per rank (default: cores / ranks on the node)");
  cmd->add_option("--dump-grads", o->dump_grads_dir, "write the first step's reduced gradients here (tests)");
  cmd->add_flag("--gemm-peak", o->gemm_peak, "also measure the sgemm peak; report the fraction of it reached");
  cmd->add_option("--fault-kill-rank", o->fault_rank, "tests: this world rank kills itself ...")->group("");
  cmd->add_option("--fault-step", o->fault_step, "... during this step (1-based)")->group("");
  cmd->add_option("--fault-nan-step", o->fault_nan_step, "tests: every weight NaN before this step (1-based)")->group("");
  cmd->add_flag("--quiet", o->quiet, "no per-step lines");
  cmd->callback([o, &exit_code] { exit_code = run_command(*o); });
}

}  // namespace parallax::cli
