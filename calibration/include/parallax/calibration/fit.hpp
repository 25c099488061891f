#pragma once
// Fitting a profile (costmodel/profile.hpp) from measurements: α–β of collectives, GEMM
// efficiency per shape and by smallest dimension, efficiency per op class, optimizer.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "parallax/calibration/samples.hpp"
#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::calib {

// time = alpha_s + factor * bytes / busbw from (bytes, seconds) points of one collective on
// `ranks` ranks. The bandwidth comes from a least-squares line through the larger half of the
// sizes (where bandwidth dominates), alpha from the median residual of the smaller third (where
// latency does), so a large message is predicted at the measured busbw. Throws InputError
// (source, what) when fewer than 2 distinct sizes are given or the time does not grow with size.
CollectiveFit fit_alpha_beta(Collective c, int64_t ranks, bool inter_node,
                             std::vector<std::pair<double, double>> points,
                             const std::string& source, const std::string& what);

// The cost model's roofline time (efficiency 1) per op class of one micro-batch through one
// layer, the embedding and the head, on a rank of the given GPU (GEMMs of linear layers excluded:
// they are fitted per shape).
std::map<std::string, double> class_roofline_s(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                               bool sequence_parallel, const GpuSpec& gpu,
                                               const JobSpec& j);

// A job as the CPU backend executes it: fp32 everywhere, Parallax's own executor as the stack.
JobSpec executed_job(const JobSpec& j, const std::string& executed_dtype);
inline constexpr const char* kExecutorFramework = "parallax-executor";

// Everything a microbenchmark run measured, as a profile relative to `cluster`'s GPU (its fp32
// peak for the CPU backend, its bf16 peak for the CUDA backend). What the run did not measure
// (the CUDA sweep times GEMMs and collectives only) comes from `base`, which must then be given;
// a measured collective replaces the base's fit of the same collective, group size and span.
EfficiencyProfile fit_profile(const RawCalibration& raw, const ClusterSpec& cluster,
                              const std::string& name, const std::string& source_label,
                              const EfficiencyProfile* base = nullptr);

}  // namespace parallax::calib
