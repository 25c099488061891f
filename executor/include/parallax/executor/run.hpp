#pragma once
// `parallax run`: every rank (MPI initialised) builds its groups and model from the plan file,
// trains, and rank 0 writes measurements.json and the Chrome trace.
#include <cstdint>
#include <string>

namespace parallax::exec {

struct RunOptions {
  std::string plan_path;
  std::string backend = "cpu";  // "cpu" or "cuda" (built with PARALLAX_CUDA)
  int64_t steps = 1;
  std::string data_path;       // empty: synthetic tokens
  std::string out_path;        // measurements.json
  std::string trace_path;      // Chrome trace
  std::string checkpoint_dir;  // save at the end (and every checkpoint_every steps)
  int64_t checkpoint_every = 0;
  bool resume = false;             // a checkpoint must be there and load (else exit 2)
  bool resume_if_present = false;  // resume when there is one, else start fresh (requeued jobs)
  std::string dump_grads_dir;  // gradients of the first step of this run (tests)
  uint64_t seed = 1234;
  double grad_clip = 1.0;
  double lr = 3e-4;
  int threads = 0;  // per rank; 0 = cores on the node / ranks on the node
  bool quiet = false;
  bool gemm_peak = false;
  // Fault injection (tests): world rank fault_rank kills itself (SIGKILL) in step fault_step,
  // after its gradient reduction, while the other ranks wait in the next collective.
  int fault_rank = -1;
  int64_t fault_step = 0;
  // Fault injection (tests): every weight of every rank set to NaN before step fault_nan_step
  // (1-based), so that step's loss is NaN as when training diverges.
  int64_t fault_nan_step = 0;
};

// Throws InputError (identically on every rank) for bad input, and RunFailure (identically on
// every rank) when the loss or gradient norm of a step is not finite or a checkpoint cannot be
// written; the checkpoints written before are kept. SIGTERM or SIGINT on any rank (or on mpirun,
// which forwards it) ends the run cleanly after the current step: every rank writes the
// checkpoint (with --checkpoint-dir) and measurements, and returns.
void run_plan(const RunOptions& o);

}  // namespace parallax::exec
