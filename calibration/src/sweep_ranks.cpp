// The ranks' side of the microbenchmark sweep (sweep.hpp). cpu: every rank benchmarks its kernels
// at once (the node busy as in a run), then the optimizer, then the collectives. cuda: each rank
// takes the GPU of its local rank; rank 0 sweeps the GEMMs (the GPUs do not share compute), then
// all sweep the collectives. Rank 0 writes what it measured.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "parallax/calibration/cpu_microbench.hpp"
#include "parallax/calibration/machine.hpp"
#include "parallax/calibration/sweep.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/executor/measurements.hpp"
#include "parallax/kernels/cpu.hpp"
#include "parallax/kernels/gemm_path.hpp"
#if defined(PARALLAX_HAVE_CUDA)
#include "parallax/calibration/cuda_microbench.hpp"
#include "parallax/executor/cuda_trainer.hpp"
#include "parallax/kernels/cuda/device.hpp"
#endif

namespace parallax::calib {

namespace {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

using ShapeBench = std::function<void(const ModelSpec&, int64_t tp, int64_t micro_batch)>;

// Every (model, tp, micro-batch) of the sweep, with a progress line on rank 0.
void each_shape(const SweepOptions& o, const std::vector<ModelSpec>& models, int rank, const ShapeBench& bench) {
  for (const ModelSpec& m : models)
    for (int64_t tp : sweep_tps(o, models))
      for (int64_t mb : o.mbs) {
        bench(m, tp, mb);
        if (rank == 0)
          std::fprintf(stderr, "calibrate: %s tp %lld mbs %lld\n", m.name.c_str(), static_cast<long long>(tp),
                       static_cast<long long>(mb));
      }
}

void sweep_cpu(const SweepOptions& o, const std::vector<ModelSpec>& models, int rank, BenchOptions& bo,
               RawCalibration& raw) {
  const double overhead_bytes = exec::peak_resident_bytes();
  const int threads = std::max(1, machine_cores() / o.np);
  kernels::set_compute_threads(threads);
  raw.threads_per_rank = threads;
  raw.gemm_path = kernels::gemm_path_description();
  raw.machine = {{"host", host_name()}, {"cores", machine_cores()}, {"threads_per_rank", threads},
                 {"process_overhead_bytes", overhead_bytes}};
  bo.caches = read_cache_sizes();
  raw.machine["caches"] = bo.caches.description;
  raw.machine["llc_bytes"] = bo.caches.llc_bytes;
  raw.machine["llc_cpus"] = bo.caches.llc_cpus;
  each_shape(o, models, rank, [&](const ModelSpec& m, int64_t tp, int64_t mb) {
    raw.compute.push_back(bench_compute(m, tp, mb, bo, MPI_COMM_WORLD));
  });
  for (const ModelSpec& m : models)
    for (int64_t tp : sweep_tps(o, models)) {
      PlanSpec p;
      p.tp = tp;
      MPI_Barrier(MPI_COMM_WORLD);
      raw.optimizer.push_back(bench_optimizer(static_cast<int64_t>(stage_params_per_rank(m, p, 0)), bo));
    }
}

#if defined(PARALLAX_HAVE_CUDA)
void sweep_cuda(const SweepOptions& o, const std::vector<ModelSpec>& models, int rank, const BenchOptions& bo,
                RawCalibration& raw) {
  const int device = exec::select_cuda_device();
  raw.threads_per_rank = 1;
  raw.gemm_path =
      "cuBLAS cublasGemmEx (CUDA " + kernels::cuda::runtime_version() + "), bf16 operands, fp32 accumulation";
  raw.machine = {{"host", host_name()}, {"device", kernels::cuda::device_description(device)}};
  if (rank == 0)
    each_shape(o, models, rank, [&](const ModelSpec& m, int64_t tp, int64_t mb) {
      raw.compute.push_back(bench_compute_cuda(m, tp, mb, bo));
    });
}
#endif

void sweep_collectives(const SweepOptions& o, int rank, RawCalibration& raw) {
  BenchOptions bo;
  bo.repeats = o.repeats;
  bo.warmup = o.warmup;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::fprintf(stderr, "calibrate: collectives over %d ranks\n", o.np);
  std::vector<double> sizes;
  for (double b = 4096; b <= 64.0 * 1024 * 1024; b *= 4) sizes.push_back(b);
#if defined(PARALLAX_HAVE_CUDA)
  if (o.backend == "cuda") {
    raw.comm = bench_comm_cuda(MPI_COMM_WORLD, sizes, bo);
    return;
  }
#endif
  bo.caches = read_cache_sizes();  // flushed before each call
  raw.comm = bench_comm(MPI_COMM_WORLD, sizes, bo);
}

// The request is the launcher's own file (sweep_launch.cpp writes it); one given by hand that
// does not read is refused as bad input, in one line.
SweepOptions read_request(const nlohmann::json& j, const std::string& source, std::string* results_path) {
  try {
    SweepOptions o;
    o.backend = j.at("backend").get<std::string>();
    o.models = j.at("models").get<std::vector<std::string>>();
    o.tps = j.at("tps").get<std::vector<int64_t>>();
    o.mbs = j.at("mbs").get<std::vector<int64_t>>();
    o.repeats = j.at("repeats").get<int>();
    o.warmup = j.at("warmup").get<int>();
    *results_path = j.at("results").get<std::string>();
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "$", std::string("not a calibration sweep request (") + e.what() + ")");
  }
}

}  // namespace

void run_sweep_ranks(const std::string& request_path) {
  std::string results_path;
  SweepOptions o = read_request(read_json_file(request_path), request_path, &results_path);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &o.np);
  std::vector<ModelSpec> models;
  for (const std::string& m : o.models) models.push_back(load_model(m));
  BenchOptions bo;
  bo.repeats = o.repeats;
  bo.warmup = o.warmup;
  RawCalibration raw;
  raw.backend = o.backend;
  raw.ranks = o.np;
  raw.date = utc_date();
  if (o.backend == "cuda") {
#if defined(PARALLAX_HAVE_CUDA)
    sweep_cuda(o, models, rank, bo, raw);
#endif
  } else {
    sweep_cpu(o, models, rank, bo, raw);
  }
  sweep_collectives(o, rank, raw);
  if (rank == 0) write_file_atomic(results_path, to_json(raw).dump(1) + "\n");
}

}  // namespace parallax::calib
