#pragma once
// CPU-backend microbenchmarks: the executor's own kernels (kernels_cpu) on the shapes a model's
// layers produce under a tensor-parallel degree and micro-batch size, the optimizer step, and
// the executor's MPI collectives (exec::Comm) over group and message sizes. Each measurement
// has warm-up calls and repeats; compute reports the median, communication the slowest rank's
// mean (a collective ends when its last rank does).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallax/calibration/cache_sizes.hpp"
#include "parallax/calibration/samples.hpp"

namespace parallax::calib {

// Memory a sweep's timed calls reuse: the scratch written to evict caches and the GEMM operand
// rotations. Allocated and faulted in as the first call that needs it grows it, then kept:
// allocating 64 MB per GEMM tripled the sweep's time.
struct BenchScratch {
  std::vector<char> flush;
  std::vector<float> rotation;
};

struct BenchOptions {
  int warmup = 2;
  int repeats = 5;
  CacheSizes caches;
  size_t flush_bytes = 0;  // scratch written before each timed call (set by bench_compute)
  bool hot_inputs = false;  // GEMMs: the operand the previous op produced is hot (warm pass)
  // Shared by copies of these options (bench_compute's cold and warm passes).
  std::shared_ptr<BenchScratch> scratch = std::make_shared<BenchScratch>();
};

// One micro-batch through one layer, the embedding and the head, timed kernel by kernel on this
// rank's compute threads (set them before calling), twice: cold (caches flushed: the data comes
// from memory) into class_s and the GEMMs' seconds, then warm (no flush: the data hot in the
// caches from the previous call, as between a trainer's consecutive ops) into class_warm_s and
// warm_seconds. GEMMs find their weights in memory in both passes (a rotation of copies larger
// than the cache, not a flush); warm, the activation operand is hot. Collective over `comm` (barriers keep one rank's cold flushes out of another's warm
// pass).
ComputeSample bench_compute(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                            const BenchOptions& o, MPI_Comm comm);
OptimizerSample bench_optimizer(int64_t params, const BenchOptions& o);
// Collective: all ranks of `world` must call it. Groups are the first n ranks for n = 2..size;
// send/recv runs between ranks 0 and 1. Returns the samples on rank 0 (empty elsewhere).
std::vector<CommSample> bench_comm(MPI_Comm world, const std::vector<double>& sizes_bytes,
                                   const BenchOptions& o);

}  // namespace parallax::calib
