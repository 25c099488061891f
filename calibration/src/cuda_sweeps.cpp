#include "parallax/calibration/cuda_sweeps.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>

#include "parallax/executor/comm/nccl_comm.hpp"
#include "parallax/kernels/cuda/blas.hpp"
#include "parallax/kernels/cuda/check.hpp"

namespace parallax::calib {

using kernels::cuda::Blas;

namespace {

// Device memory freed on scope exit (the benchmarks allocate once, up front).
struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(size_t bytes) { PX_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 1))); }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { PX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { PX_CUDA(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
};

double seconds_between(const Event& a, const Event& b) {
  float ms = 0;
  PX_CUDA(cudaEventElapsedTime(&ms, a.e, b.e));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace

std::vector<CudaGemmTiming> gemm_sweep(const std::vector<LayerGemmCall>& calls, int warmup, int repeats) {
  int device = 0, l2 = 0;
  PX_CUDA(cudaGetDevice(&device));
  PX_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  // One buffer per operand, as large as the largest call needs in its own layout and dtype.
  size_t a_bytes = 1, b_bytes = 1, c_bytes = 1;
  for (const LayerGemmCall& x : calls) {
    const kernels::cuda::GemmCallBytes n = kernels::cuda::gemm_call_bytes(x.call);
    a_bytes = std::max(a_bytes, static_cast<size_t>(n.a));
    b_bytes = std::max(b_bytes, static_cast<size_t>(n.b));
    c_bytes = std::max(c_bytes, static_cast<size_t>(n.c));
  }
  Stream stream;
  Blas blas(stream.s);
  DeviceMem a(a_bytes), b(b_bytes), c(c_bytes), flush(2 * static_cast<size_t>(l2));
  // Operands: bytes 0x3c everywhere (bf16 about 0.0115, fp32 about 0.0115); values do not change
  // the GEMM's speed. The output starts at zero: calls with beta 1 accumulate finite sums into it.
  PX_CUDA(cudaMemsetAsync(a.p, 0x3c, a_bytes, stream.s));
  PX_CUDA(cudaMemsetAsync(b.p, 0x3c, b_bytes, stream.s));
  PX_CUDA(cudaMemsetAsync(c.p, 0, c_bytes, stream.s));
  Event start, stop;
  std::vector<CudaGemmTiming> out;
  for (const LayerGemmCall& x : calls) {
    const kernels::cuda::GemmCall& g = x.call;
    auto run = [&] { blas.gemm(g.gemm, g.alpha, a.p, g.a_type, b.p, g.b_type, g.beta, c.p, g.c_type); };
    for (int i = 0; i < warmup; ++i) run();
    std::vector<double> t;
    for (int r = 0; r < repeats; ++r) {
      PX_CUDA(cudaMemsetAsync(flush.p, r & 0xff, 2 * static_cast<size_t>(l2), stream.s));
      PX_CUDA(cudaEventRecord(start.e, stream.s));
      run();
      PX_CUDA(cudaEventRecord(stop.e, stream.s));
      PX_CUDA(cudaEventSynchronize(stop.e));
      t.push_back(seconds_between(start, stop));
    }
    std::sort(t.begin(), t.end());
    CudaGemmTiming timing;
    timing.call = x;
    timing.repeats = repeats;
    timing.seconds = t.empty() ? 0 : t[t.size() / 2];
    timing.min_seconds = t.empty() ? 0 : t.front();
    const double flop = 2.0 * static_cast<double>(g.gemm.M * g.gemm.N * g.gemm.K * g.gemm.batch);
    timing.flop_per_s = timing.seconds > 0 ? flop / timing.seconds : 0;
    out.push_back(timing);
  }
  return out;
}

std::vector<CudaCollectiveTiming> nccl_sweep(MPI_Comm comm, const std::vector<Collective>& collectives,
                                         const std::vector<int64_t>& bytes, int warmup, int iters) {
  exec::NcclComm nc(comm);
  const int n = nc.size(), r = nc.rank();
  int64_t max_bytes = 4;
  for (int64_t b : bytes) max_bytes = std::max(max_bytes, b);
  Stream stream;
  DeviceMem send(static_cast<size_t>(max_bytes)), recv(static_cast<size_t>(max_bytes));
  PX_CUDA(cudaMemsetAsync(send.p, 0, static_cast<size_t>(max_bytes), stream.s));
  Event start, stop;
  std::vector<CudaCollectiveTiming> out;
  for (Collective c : collectives)
    for (int64_t b : bytes) {
      // float elements; all-gather and reduce-scatter move n blocks of `count / n`.
      const auto count = static_cast<size_t>(b / 4);
      const size_t block = count / static_cast<size_t>(n);
      auto run_once = [&] {
        switch (c) {
          case Collective::all_reduce:
            PX_NCCL(ncclAllReduce(send.p, recv.p, count, ncclFloat, ncclSum, nc.get(), stream.s));
            break;
          case Collective::all_gather:
            PX_NCCL(ncclAllGather(send.p, recv.p, block, ncclFloat, nc.get(), stream.s));
            break;
          case Collective::reduce_scatter:
            PX_NCCL(ncclReduceScatter(send.p, recv.p, block, ncclFloat, ncclSum, nc.get(), stream.s));
            break;
          case Collective::broadcast:
            PX_NCCL(ncclBroadcast(send.p, recv.p, count, ncclFloat, 0, nc.get(), stream.s));
            break;
          case Collective::send_recv:
            PX_NCCL(ncclGroupStart());
            PX_NCCL(ncclSend(send.p, count, ncclFloat, (r + 1) % n, nc.get(), stream.s));
            PX_NCCL(ncclRecv(recv.p, count, ncclFloat, (r + n - 1) % n, nc.get(), stream.s));
            PX_NCCL(ncclGroupEnd());
            break;
        }
      };
      for (int i = 0; i < warmup; ++i) run_once();
      MPI_Barrier(comm);
      PX_CUDA(cudaEventRecord(start.e, stream.s));
      for (int i = 0; i < iters; ++i) run_once();
      PX_CUDA(cudaEventRecord(stop.e, stream.s));
      PX_CUDA(cudaEventSynchronize(stop.e));
      double t = seconds_between(start, stop) / std::max(iters, 1);
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_SUM, comm);
      t /= n;
      CudaCollectiveTiming x;
      x.collective = c;
      x.ranks = n;
      x.bytes = b;
      x.seconds = t;
      x.algbw_gb_per_s = t > 0 ? static_cast<double>(b) / t / 1e9 : 0;
      x.busbw_gb_per_s = x.algbw_gb_per_s * busbw_factor(c, n);
      out.push_back(x);
    }
  return out;
}

}  // namespace parallax::calib
