#include "parallax/calibration/cuda_microbench.hpp"

#include <algorithm>
#include <stdexcept>

#include "parallax/calibration/cuda_sweeps.hpp"
#include "parallax/calibration/layer_gemm_calls.hpp"
#include "parallax/calibration/linear_shapes.hpp"

namespace parallax::calib {

using kernels::cuda::GemmRole;

ComputeSample bench_compute_cuda(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                 const BenchOptions& o) {
  ComputeSample s;
  s.model = m;
  s.tp = tp;
  s.micro_batch = micro_batch;
  // Per linear layer the executor's three calls (layer_gemm_calls.hpp): forward, dgrad and
  // wgrad, each timed as the executor makes it; one forward and one backward sample per layer.
  const std::vector<CudaGemmTiming> t =
      gemm_sweep(layer_gemm_calls(m, tp, micro_batch), o.warmup, std::max(1, o.repeats));
  for (const LinearShape& l : layer_linear_shapes(m, tp, micro_batch)) {
    auto seconds = [&](GemmRole role) {
      for (const CudaGemmTiming& x : t)
        if (x.call.layer == l.name && x.call.call.role == role) return x.seconds;
      throw std::logic_error("bench_compute_cuda: no " + l.name + " " + kernels::cuda::to_string(role) + " GEMM");
    };
    const auto dm = static_cast<double>(l.m), dn = static_cast<double>(l.n), dk = static_cast<double>(l.k);
    s.gemms.push_back({false, dm, dn, dk, seconds(GemmRole::forward), 0, 0});
    const double dgrad = seconds(GemmRole::dgrad), wgrad = seconds(GemmRole::wgrad);
    s.gemms.push_back({true, dm, dn, dk, dgrad + wgrad, dgrad, wgrad});
  }
  return s;
}

std::vector<CommSample> bench_comm_cuda(MPI_Comm world, const std::vector<double>& sizes_bytes,
                                        const BenchOptions& o) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<int> groups;
  for (int n = 2; n < size; n *= 2) groups.push_back(n);
  if (size >= 2) groups.push_back(size);
  std::vector<int64_t> bytes;
  for (double b : sizes_bytes) bytes.push_back(static_cast<int64_t>(b));
  std::vector<CommSample> out;
  auto add = [&](const std::vector<CudaCollectiveTiming>& t) {
    for (const CudaCollectiveTiming& x : t) {
      CommSample c;
      c.collective = x.collective;
      c.ranks = x.ranks;
      c.bytes = static_cast<double>(x.bytes);
      c.seconds = x.seconds;
      out.push_back(c);
    }
  };
  const int iters = std::max(1, o.repeats);
  for (int n : groups) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(world, rank < n ? 0 : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      add(nccl_sweep(sub, {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather},
                         bytes, o.warmup, iters));
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(world);
  }
  if (size >= 2) {
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(world, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair != MPI_COMM_NULL) {
      add(nccl_sweep(pair, {Collective::send_recv}, bytes, o.warmup, iters));
      MPI_Comm_free(&pair);
    }
    MPI_Barrier(world);
  }
  return out;
}

}  // namespace parallax::calib
