#pragma once
// CUDA-backend microbenchmarks for `parallax calibrate --backend cuda` (built with PARALLAX_CUDA):
// the cuBLAS GEMMs of a model's layers as the executor makes them (cuda_sweeps.hpp gemm_sweep
// over layer_gemm_calls.hpp: bf16 operands, fp32 accumulation, each call's own transposes,
// output dtype and beta, L2 flushed before each timed call, median of the repeats), forward,
// dgrad and wgrad timed apart; and NCCL collectives over the first n ranks (nccl_sweep, nccl-tests'
// conventions). Element-wise kernels and the optimizer are not swept: the fit keeps them from the
// cluster's base profile.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "parallax/calibration/cpu_microbench.hpp"
#include "parallax/calibration/samples.hpp"

namespace parallax::calib {

// GEMMs of one micro-batch through one layer and the head at (tp, micro_batch), on this rank's
// current device.
ComputeSample bench_compute_cuda(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                 const BenchOptions& o);
// Collective: every rank of `world` calls it (each on its own device). Groups are the first n
// ranks for n = 2, 4, ... and the world size; send/recv on the first 2. Samples are the same on
// every rank.
std::vector<CommSample> bench_comm_cuda(MPI_Comm world, const std::vector<double>& sizes_bytes,
                                        const BenchOptions& o);

}  // namespace parallax::calib
