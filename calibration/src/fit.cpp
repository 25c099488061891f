#include "parallax/calibration/fit.hpp"

#include <algorithm>
#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax::calib {

CollectiveFit fit_alpha_beta(Collective c, int64_t ranks, bool inter_node,
                             std::vector<std::pair<double, double>> points,
                             const std::string& source, const std::string& what) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               points.end());
  if (points.size() < 2)
    throw InputError(source, what, "needs at least 2 message sizes to fit latency and bandwidth");
  const double factor = busbw_factor(c, ranks);
  // Bandwidth: least squares over the larger half of the sizes.
  const size_t lo = points.size() / 2 - (points.size() % 2 == 0 && points.size() > 2 ? 1 : 0);
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (size_t i = std::min(lo, points.size() - 2); i < points.size(); ++i) {
    const auto [x, y] = points[i];
    sx += x, sy += y, sxx += x * x, sxy += x * y, n += 1;
  }
  double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  if (!(slope > 0) || !std::isfinite(slope)) {
    // Flat or noisy: the largest message's own rate.
    slope = points.back().second / points.back().first;
  }
  if (!(slope > 0) || !std::isfinite(slope))
    throw InputError(source, what, "time does not grow with message size; cannot fit a bandwidth");
  // Latency: median residual of the smaller third.
  std::vector<double> res;
  for (size_t i = 0; i < std::max<size_t>(1, points.size() / 3); ++i)
    res.push_back(std::max(0.0, points[i].second - slope * points[i].first));
  std::sort(res.begin(), res.end());
  CollectiveFit f;
  f.collective = c;
  f.inter_node = inter_node;
  f.ranks = ranks;
  f.alpha_s = res[res.size() / 2];
  f.busbw_bytes_per_s = factor / slope;
  if (c == Collective::send_recv) f.busbw_bytes_per_s = 1 / slope;
  return f;
}

JobSpec executed_job(const JobSpec& j, const std::string& executed_dtype) {
  JobSpec out = j;
  bool known = false;
  for (int i = 0; i < kDtypeCount; ++i)
    if (executed_dtype == to_string(static_cast<Dtype>(i))) out.dtype = static_cast<Dtype>(i), known = true;
  if (!known) throw InputError("measurements", "$.executed_dtype", "unknown dtype \"" + executed_dtype + "\"");
  out.framework = kExecutorFramework;
  return out;
}

std::map<std::string, double> class_roofline_s(const ModelSpec& m, int64_t tp, int64_t micro_batch,
                                               bool sequence_parallel, const GpuSpec& gpu,
                                               const JobSpec& j) {
  PlanSpec p;
  p.tp = tp;
  p.micro_batch = micro_batch;
  p.sequence_parallel = sequence_parallel;
  const ShardShape sh = shard_shape(m, j, p);
  std::vector<Op> ops = layer_ops(m, sh, Recompute::none);
  for (const Op& op : embedding_ops(m, sh)) ops.push_back(op);
  for (const Op& op : head_ops(m, sh)) ops.push_back(op);
  const double peak = gpu.peak(j.dtype);
  std::map<std::string, double> out;
  for (const Op& op : ops) {
    const std::string cls = op.op_class;
    if (cls == "gemm") continue;
    out[cls] += op_roofline_s(op, peak, gpu.hbm_bandwidth_bytes_per_s);
  }
  return out;
}

}  // namespace parallax::calib
