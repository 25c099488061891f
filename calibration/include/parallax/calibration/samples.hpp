#pragma once
// Raw microbenchmark results (what `parallax calibrate --backend cpu` measures before fitting):
// per model shape the time of each kernel class and each GEMM, the optimizer step, and
// collectives over group and message sizes. Written by the MPI worker, read by the fitter.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/model_spec.hpp"
#include "parallax/topologies/collectives.hpp"

namespace parallax::calib {

// One GEMM of a linear layer as the executor runs it. Forward: {m, n, k} = {rows, out, in}.
// Backward: the CPU backend runs data-grad and weight-grad in one call, whose time is shared by
// both shapes; the CUDA backend times them apart (dgrad_seconds, wgrad_seconds > 0).
struct GemmSample {
  bool backward = false;
  double m = 0, n = 0, k = 0;  // the forward shape
  double seconds = 0;          // per call (forward: one GEMM; backward: dgrad + wgrad)
  double dgrad_seconds = 0;    // backward timed apart: dinp (m, k) = dout (m, n) W (n, k)
  double wgrad_seconds = 0;    //                       dW (n, k) = dout^T (n, m) inp (m, k)
  double warm_seconds = 0;     // the same call with its operands in the caches (0: not measured)
};

// One micro-batch through one layer, the embedding and the head of `model` at (tp, micro_batch):
// measured seconds per op class (costmodel/ops.hpp classes, GEMMs excluded).
struct ComputeSample {
  ModelSpec model;
  int64_t tp = 1;
  int64_t micro_batch = 1;
  std::map<std::string, double> class_s;       // caches flushed before each call
  std::map<std::string, double> class_warm_s;  // back-to-back calls, data in the caches
  std::vector<GemmSample> gemms;
};

// Adam step, gradient norm and gradient zeroing over `params` fp32 parameters.
struct OptimizerSample {
  double params = 0;
  double seconds = 0;
};

struct CommSample {
  Collective collective = Collective::all_reduce;
  int64_t ranks = 2;
  double bytes = 0;  // nccl-tests size
  double seconds = 0;
};

struct RawCalibration {
  std::string backend = "cpu";  // cpu: fp32 kernels and MPI; cuda: bf16 cuBLAS and NCCL
  nlohmann::json machine;  // host, cores, threads per rank, BLAS core
  std::string date;
  int64_t ranks = 1;
  int64_t threads_per_rank = 1;
  std::string gemm_path;
  std::vector<ComputeSample> compute;
  std::vector<OptimizerSample> optimizer;
  std::vector<CommSample> comm;
};

nlohmann::json to_json(const RawCalibration& r);
RawCalibration raw_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace parallax::calib
