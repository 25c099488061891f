#include "parallax/calibration/cuda_microbench.hpp"

#include <algorithm>

#include "parallax/calibration/linear_shapes.hpp"
#include "parallax/calibration/cuda_sweeps.hpp"

namespace parallax::calib {

ComputeSample bench_compute_cuda(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                 const BenchOptions& o) {
  ComputeSample s;
  s.model = m;
  s.tp = tp;
  s.micro_batch = micro_batch;
  // Per linear layer three GEMMs in gemm_sweep's layout, C (M, N) = A (M, K) B^T:
  // forward (m, n, k); dgrad dinp (m, k) from dout (m, n) and W (n, k); wgrad dW (n, k) from
  // dout^T (n, m) and inp (m, k).
  std::vector<CudaGemmShape> shapes;
  const std::vector<LinearShape> linear = layer_linear_shapes(m, tp, micro_batch);
  for (const LinearShape& l : linear) {
    shapes.push_back({l.m, l.n, l.k, l.name + " forward"});
    shapes.push_back({l.m, l.k, l.n, l.name + " dgrad"});
    shapes.push_back({l.n, l.k, l.m, l.name + " wgrad"});
  }
  const std::vector<CudaGemmTiming> t = gemm_sweep(shapes, o.warmup, std::max(1, o.repeats));
  for (size_t i = 0; i < linear.size(); ++i) {
    const LinearShape& l = linear[i];
    const auto dm = static_cast<double>(l.m), dn = static_cast<double>(l.n), dk = static_cast<double>(l.k);
    s.gemms.push_back({false, dm, dn, dk, t[3 * i].seconds, 0, 0});
    const double dgrad = t[3 * i + 1].seconds, wgrad = t[3 * i + 2].seconds;
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
