#pragma once
// CPU-backend microbenchmarks: the executor's own kernels (kernels_cpu) on the shapes a model's
// layers produce under a tensor-parallel degree and micro-batch size, the optimizer step, and
// the executor's MPI collectives (exec::Comm) over group and message sizes. Each measurement
// has warm-up calls and repeats; compute reports the median, communication the slowest rank's
// mean (a collective ends when its last rank does).
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "parallax/calibration/samples.hpp"

namespace parallax::calib {

struct BenchOptions {
  int warmup = 2;
  int repeats = 5;
};

// One micro-batch through one layer, the embedding and the head, timed kernel by kernel on this
// rank's compute threads (set them before calling).
ComputeSample bench_compute(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                            const BenchOptions& o);
OptimizerSample bench_optimizer(int64_t params, const BenchOptions& o);
// Collective: all ranks of `world` must call it. Groups are the first n ranks for n = 2..size;
// send/recv runs between ranks 0 and 1. Returns the samples on rank 0 (empty elsewhere).
std::vector<CommSample> bench_comm(MPI_Comm world, const std::vector<double>& sizes_bytes,
                                   const BenchOptions& o);

}  // namespace parallax::calib
