#pragma once
// The CUDA sweeps under `parallax calibrate --backend cuda` (docs/design.md §9), built with PARALLAX_CUDA.
//
// gemm_sweep: each call exactly as the executor makes it (layer_gemm_calls.hpp: the CUDA
// backend's own plans; cublasGemmEx through the backend's Blas, bf16 operands, fp32 accumulation,
// each call with its transposes, leading dimensions, output dtype, alpha and beta: forward NT
// with bf16 output and beta 0, dgrad NN accumulating into bf16 (beta 1), wgrad TN accumulating
// into fp32 (beta 1), so the output of a beta-1 call is read too). Operands are filled once
// (outputs zeroed, so accumulating calls read finite values); warm-up calls first, then
// `repeats` timed calls, each timed alone with CUDA events after the L2 cache was flushed (a
// memset of twice the L2 size), so a repeat never finds its operands in L2; reports the median.
//
// nccl_sweep: collectives over the ranks of an MPI communicator (one NCCL communicator
// bootstrapped from it), in nccl-tests' conventions: `bytes` is the largest buffer of the call
// (all-gather's output, reduce-scatter's input), time is the mean over `iters` back-to-back
// calls after `warmup` calls, averaged over ranks; algbw = bytes / time, busbw = algbw *
// busbw_factor (topologies/collectives.hpp: 2(n-1)/n all-reduce, (n-1)/n all-gather and
// reduce-scatter, 1 send/recv).
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "parallax/calibration/layer_gemm_calls.hpp"
#include "parallax/topologies/collectives.hpp"

namespace parallax::calib {

struct CudaGemmTiming {
  LayerGemmCall call;
  double seconds = 0;      // median of the repeats
  double min_seconds = 0;
  double flop_per_s = 0;   // 2 M N K batch / seconds
  int repeats = 0;
};

std::vector<CudaGemmTiming> gemm_sweep(const std::vector<LayerGemmCall>& calls, int warmup = 3,
                                       int repeats = 10);

struct CudaCollectiveTiming {
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  int64_t bytes = 0;
  double seconds = 0;
  double algbw_gb_per_s = 0;  // 1e9 bytes per second
  double busbw_gb_per_s = 0;
};

// Collective over `comm` (every rank calls it; each rank uses its current device). Results are
// the same on every rank. send_recv: rank r sends to r+1 and receives from r-1 (a ring).
std::vector<CudaCollectiveTiming> nccl_sweep(MPI_Comm comm, const std::vector<Collective>& collectives,
                                         const std::vector<int64_t>& bytes, int warmup = 5,
                                         int iters = 20);

}  // namespace parallax::calib
