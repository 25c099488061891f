#pragma once
// The microbenchmark sweep of `parallax calibrate --backend cpu|cuda`, end to end: the launcher
// side runs the sweep's ranks under mpirun and returns what rank 0 measured; the ranks' side
// (run_sweep_ranks) measures. The two talk through a request file (the options and where to put
// the results) and a results file, both temporary, both removed.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/calibration/samples.hpp"
#include "parallax/core/model_spec.hpp"

namespace parallax::calib {

struct SweepOptions {
  std::string backend = "cpu";  // cpu: the executor's kernels and MPI; cuda: cuBLAS and NCCL
  int np = 0;                   // ranks (run_sweep needs it set)
  std::vector<std::string> models = {"gpt-tiny", "gpt-25m"};  // presets whose layer shapes to time
  std::vector<int64_t> tps;     // empty: sweep_tps' default
  std::vector<int64_t> mbs = {1, 2, 4, 8};
  int repeats = 5;
  int warmup = 2;
};

// The tensor-parallel degrees swept: o.tps, or those dividing every model's heads and FFN, up to
// the ranks (cpu: a shape's rank count is what the run has) or up to 8 (cuda: a GPU node's usual
// TP).
std::vector<int64_t> sweep_tps(const SweepOptions& o, const std::vector<ModelSpec>& models);

// Launcher: runs `worker_command REQUEST` as o.np ranks under mpirun (worker_command is how this
// program runs run_sweep_ranks, e.g. {"/path/parallax", "calibrate", "--worker"}), waits, and
// returns rank 0's results; with raw_out non-empty, also keeps them there. Throws InputError when
// the ranks fail; the temporary files are removed either way.
RawCalibration run_sweep(const SweepOptions& o, const std::vector<std::string>& worker_command,
                         const std::string& raw_out);

// Ranks' side, under mpirun with MPI initialised: reads the request, measures (collective over
// MPI_COMM_WORLD), and rank 0 writes the results where the request says.
void run_sweep_ranks(const std::string& request_path);

}  // namespace parallax::calib
