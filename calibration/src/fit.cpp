#include "parallax/calibration/fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax::calib {

namespace {

struct ShapeKey {
  std::string role;
  double m, n, k;
  bool operator<(const ShapeKey& o) const {
    return std::tie(role, m, n, k) < std::tie(o.role, o.m, o.n, o.k);
  }
};

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

// "2048x4608x12288": a GEMM's integer dimensions.
std::string dims(double m, double n, double k) {
  std::ostringstream s;
  s.precision(0);
  s << std::fixed << m << "x" << n << "x" << k;
  return s.str();
}

}  // namespace

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

EfficiencyProfile fit_profile(const RawCalibration& raw, const ClusterSpec& cluster,
                              const std::string& name, const std::string& source_label,
                              const EfficiencyProfile* base) {
  const std::string src = "calibration of " + cluster.name;
  const bool cuda = raw.backend == "cuda";
  if (raw.compute.empty()) throw InputError(src, "compute", "no compute measurements to fit");
  JobSpec job;
  job = executed_job(job, cuda ? "bf16" : "fp32");
  const double peak = cluster.gpu.peak(job.dtype);
  if (peak <= 0)
    throw InputError(src, "gpu", "GPU " + cluster.gpu.name + " has no " + to_string(job.dtype) + " peak");

  EfficiencyProfile p = base ? *base : EfficiencyProfile{};
  p.name = name;
  p.gemm_efficiency_by_shape.clear();
  p.gemm_efficiency_by_min_dim.clear();
  // GEMMs per shape: forward as measured; backward's dgrad and wgrad as timed apart, or sharing
  // their call's time when the backend runs them as one call.
  std::map<ShapeKey, std::pair<double, double>> shapes;  // flops, seconds
  std::map<ShapeKey, std::pair<double, double>> warm_shapes;  // flops, seconds in cache
  std::map<std::string, std::pair<double, double>> classes;  // roofline, measured seconds
  std::map<std::string, std::pair<double, double>> warm_classes;
  std::vector<std::string> configs;
  for (const ComputeSample& s : raw.compute) {
    configs.push_back(s.model.name + " tp" + std::to_string(s.tp) + " mbs" + std::to_string(s.micro_batch));
    for (const GemmSample& g : s.gemms) {
      const double f = 2 * g.m * g.n * g.k;
      if (!g.backward) {
        auto& e = shapes[{"forward", g.m, g.n, g.k}];
        e.first += f, e.second += g.seconds;
        if (g.warm_seconds > 0) {
          auto& w = warm_shapes[{"forward", g.m, g.n, g.k}];
          w.first += f, w.second += g.warm_seconds;
        }
        continue;
      }
      if (g.warm_seconds > 0) {  // one call: dgrad and wgrad share it, as cold
        auto& wd = warm_shapes[{"dgrad", g.m, g.k, g.n}];
        wd.first += f, wd.second += g.warm_seconds / 2;
        auto& ww = warm_shapes[{"wgrad", g.k, g.n, g.m}];
        ww.first += f, ww.second += g.warm_seconds / 2;
      }
      const bool apart = g.dgrad_seconds > 0 && g.wgrad_seconds > 0;
      auto& d = shapes[{"dgrad", g.m, g.k, g.n}];
      d.first += f, d.second += apart ? g.dgrad_seconds : g.seconds / 2;
      auto& w = shapes[{"wgrad", g.k, g.n, g.m}];
      w.first += f, w.second += apart ? g.wgrad_seconds : g.seconds / 2;
    }
    const auto roof = class_roofline_s(s.model, s.tp, s.micro_batch, false, cluster.gpu, job);
    for (const auto& [cls, t] : s.class_s) {
      auto it = roof.find(cls);
      if (it == roof.end()) continue;  // a kernel the cost model does not count (none today)
      classes[cls].first += it->second;
      classes[cls].second += t;
    }
    for (const auto& [cls, t] : s.class_warm_s) {
      auto it = roof.find(cls);
      if (it == roof.end() || t <= 0) continue;
      warm_classes[cls].first += it->second;
      warm_classes[cls].second += t;
    }
  }
  std::map<double, std::pair<double, double>> by_min_dim;
  for (const auto& [key, v] : shapes) {
    const double eff = v.first / (v.second * peak);
    if (eff > 1)
      throw InputError(src, "gemm " + key.role + " " + dims(key.m, key.n, key.k),
                       "measured " + fmt(v.first / v.second / 1e12) + " TFLOP/s, above the GPU preset's " +
                           to_string(job.dtype) + " peak " + fmt(peak / 1e12) + " TFLOP/s" +
                           ": the preset understates the device");
    double warm_eff = 0;
    if (auto w = warm_shapes.find(key); w != warm_shapes.end()) {
      warm_eff = w->second.first / (w->second.second * peak);
      if (warm_eff > 1)
        throw InputError(src, "gemm " + key.role + " " + dims(key.m, key.n, key.k),
                         "measured " + fmt(w->second.first / w->second.second / 1e12) +
                             " TFLOP/s in cache, above the GPU preset's " + to_string(job.dtype) +
                             " peak " + fmt(peak / 1e12) + " TFLOP/s: the preset understates the device");
    }
    p.gemm_efficiency_by_shape.push_back({key.role, 1, key.m, key.n, key.k, eff, warm_eff});
    auto& d = by_min_dim[std::min({key.m, key.n, key.k})];
    d.first += v.first, d.second += v.second;
  }
  for (const auto& [dim, v] : by_min_dim) p.gemm_efficiency_by_min_dim.emplace_back(dim, v.first / (v.second * peak));

  if (classes.empty() && !base)
    throw InputError(src, "compute", "no op-class measurements and no base profile to take them from");
  double roof_all = 0, meas_all = 0;
  for (const auto& [cls, v] : classes) {
    const double eff = v.first / v.second;
    if (eff > 100)
      throw InputError(src, "class " + cls,
                       "kernels ran 100x faster than the cost model's roofline: the GPU preset's bandwidth is wrong");
    p.op_class_efficiency[cls] = eff;
    if (cls != "attention" && cls != "attention.bwd") roof_all += v.first, meas_all += v.second;
    // memory_bound_efficiency (the fallback for classes without an entry) stays a fraction.
  }
  for (const auto& [cls, v] : warm_classes) p.op_class_efficiency_warm[cls] = std::min(100.0, v.first / v.second);
  // Each model the microbenchmarks ran keeps its own class efficiencies (op_class_efficiency_by_layer):
  // roofline over measured seconds summed over all its tp and micro-batch shards, as the aggregate.
  std::map<std::pair<std::string, LayerKey>, std::array<double, 3>> layers;  // roofline, cold s, warm s
  for (const ComputeSample& s : raw.compute) {
    const LayerKey key = layer_key(s.model);
    const auto roof = class_roofline_s(s.model, s.tp, s.micro_batch, false, cluster.gpu, job);
    for (const auto& [cls, t] : s.class_s) {
      auto it = roof.find(cls);
      if (it == roof.end() || !(t > 0)) continue;
      auto& a = layers[{cls, key}];
      a[0] += it->second, a[1] += t;
      const auto w = s.class_warm_s.find(cls);
      a[2] = a[2] < 0 || w == s.class_warm_s.end() || !(w->second > 0) ? -1 : a[2] + w->second;
    }
  }
  if (!layers.empty()) p.op_class_efficiency_by_layer.clear();
  for (const auto& [key, a] : layers)
    p.op_class_efficiency_by_layer.push_back(
        {key.first, key.second, std::min(100.0, a[0] / a[1]), a[2] > 0 ? std::min(100.0, a[0] / a[2]) : 0});
  if (raw.machine.contains("llc_bytes"))
    p.cache_bytes_per_rank = raw.machine.value("llc_bytes", 0.0) / std::max(1.0, raw.machine.value("llc_cpus", 1.0));
  if (!classes.empty()) p.memory_bound_efficiency = meas_all > 0 ? std::min(1.0, roof_all / meas_all) : 0.5;
  if (!raw.optimizer.empty()) {
    double roof = 0, meas = 0;
    for (const OptimizerSample& o : raw.optimizer) {
      roof += o.params * kOptimizerBytesPerParam / cluster.gpu.hbm_bandwidth_bytes_per_s;
      meas += o.seconds;
    }
    p.op_class_efficiency[kOptimizerClass] = std::min(1.0, roof / meas);
  }
  // Collectives: one fit per (collective, group size); the first n ranks of the run span more
  // than one node when n exceeds the cluster's GPUs per node.
  std::map<std::pair<int, int64_t>, std::vector<std::pair<double, double>>> comm;
  for (const CommSample& c : raw.comm)
    comm[{static_cast<int>(c.collective), c.ranks}].push_back({c.bytes, c.seconds});
  for (const auto& [key, pts] : comm) {
    const Collective c = static_cast<Collective>(key.first);
    const bool inter = cluster.gpus_per_node > 0 && key.second > cluster.gpus_per_node;
    CollectiveFit f = fit_alpha_beta(c, key.second, inter, pts, src,
                                     std::string(to_string(c)) + " on " + std::to_string(key.second) + " ranks");
    f.source = source_label + ", " + std::to_string(pts.size()) + " sizes " +
               fmt(pts.front().first) + "-" + fmt(pts.back().first) + " B";
    std::erase_if(p.communication, [&](const CollectiveFit& b) {
      return b.collective == f.collective && b.ranks == f.ranks && b.inter_node == f.inter_node;
    });
    p.communication.push_back(f);
  }
  p.frameworks[kExecutorFramework] = SoftwareStack{1.0};
  if (raw.machine.contains("process_overhead_bytes"))
    p.memory_reserve_bytes = raw.machine.value("process_overhead_bytes", 0.0);
  p.provenance.machine = raw.machine.value("host", std::string("unknown")) + " (" +
                         (cuda ? raw.machine.value("device", std::string("unknown device"))
                               : std::to_string(raw.machine.value("cores", 0)) + " cores") +
                         ", " + raw.gemm_path + ")";
  p.provenance.backend = raw.backend;
  p.provenance.date = raw.date;
  p.provenance.tool = "parallax calibrate --backend " + raw.backend + " --np " + std::to_string(raw.ranks);
  p.provenance.threads_per_rank = raw.threads_per_rank;
  p.provenance.source_runs = {"microbenchmarks: " + std::to_string(raw.compute.size()) +
                              " model shapes, " + std::to_string(raw.comm.size()) + " collective points"};
  std::ostringstream s;
  s << source_label << " on " << p.provenance.machine << ", " << raw.ranks << " ranks";
  if (!cuda) s << " of " << raw.threads_per_rank << " thread(s)";
  s << ". GEMMs: the executor's "
    << (cuda ? "cublasGemmEx calls (bf16 operands, fp32 accumulation; L2 flushed before each timed "
               "call; dgrad and wgrad timed apart)"
             : "sgemm calls (forward as measured; dgrad and wgrad share their call's time)")
    << " on the linear-layer shapes of ";
  for (size_t i = 0; i < configs.size(); ++i) s << (i ? ", " : "") << configs[i];
  s << "; the table by smallest dimension aggregates them. ";
  if (!classes.empty())
    s << "Op classes: measured kernel time against the cost model's roofline of the same ops on GPU "
         "preset "
      << cluster.gpu.name << " (its peak and bandwidth are nominal denominators), per model and "
      << "over all models. ";
  else
    s << "Op classes, optimizer, overlap and memory reserve: from profile " << (base ? base->name : "")
      << " (not measured by this sweep). ";
  if (p.cache_bytes_per_rank > 0)
    s << "Each kernel timed cold (caches flushed) and warm (the call repeated without a flush: its "
      << "data in the " << raw.machine.value("caches", std::string("caches"))
      << ", as between a trainer's consecutive ops); cache_bytes_per_rank is the last level's share of one core. ";
  s << "Collectives: " << (cuda ? "NCCL (nccl-tests conventions)" : "exec::Comm over MPI")
    << ", alpha-beta per collective and group size.";
  if (!cuda) s << " Overlap 0: the executor overlaps nothing.";
  p.source = s.str();
  return p;
}

}  // namespace parallax::calib
