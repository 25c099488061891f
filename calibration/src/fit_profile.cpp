// fit_profile: a microbenchmark sweep (RawCalibration) fitted into an efficiency profile, in named
// steps: GEMMs per shape, op classes over all models, op classes per model (layer), the optimizer,
// collectives, and the provenance text that says how each was measured.
#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <tuple>

#include "parallax/calibration/fit.hpp"
#include "parallax/core/error.hpp"
#include "parallax/costmodel/iteration_costs.hpp"

namespace parallax::calib {

namespace {

struct ShapeKey {
  std::string role;
  double m, n, k;
  bool operator<(const ShapeKey& o) const {
    return std::tie(role, m, n, k) < std::tie(o.role, o.m, o.n, o.k);
  }
};

using Sums = std::pair<double, double>;  // (flops or roofline seconds, measured seconds)

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

// What every step needs: where errors point, the executed dtype's job and its peak.
struct FitContext {
  const ClusterSpec& cluster;
  std::string src;
  bool cuda = false;
  JobSpec job;
  double peak = 0;
};

// GEMM flops and seconds per shape, cold (caches flushed) and warm. Forward as measured;
// backward's dgrad and wgrad as timed apart, or sharing their call's time when the backend runs
// them as one call.
struct GemmSums {
  std::map<ShapeKey, Sums> cold, warm;
};

GemmSums sum_gemms(const RawCalibration& raw) {
  GemmSums g;
  for (const ComputeSample& s : raw.compute) {
    for (const GemmSample& x : s.gemms) {
      const double f = 2 * x.m * x.n * x.k;
      auto add = [&](std::map<ShapeKey, Sums>& to, const ShapeKey& key, double seconds) {
        auto& e = to[key];
        e.first += f, e.second += seconds;
      };
      if (!x.backward) {
        add(g.cold, {"forward", x.m, x.n, x.k}, x.seconds);
        if (x.warm_seconds > 0) add(g.warm, {"forward", x.m, x.n, x.k}, x.warm_seconds);
        continue;
      }
      if (x.warm_seconds > 0) {  // one call: dgrad and wgrad share it, as cold
        add(g.warm, {"dgrad", x.m, x.k, x.n}, x.warm_seconds / 2);
        add(g.warm, {"wgrad", x.k, x.n, x.m}, x.warm_seconds / 2);
      }
      const bool apart = x.dgrad_seconds > 0 && x.wgrad_seconds > 0;
      add(g.cold, {"dgrad", x.m, x.k, x.n}, apart ? x.dgrad_seconds : x.seconds / 2);
      add(g.cold, {"wgrad", x.k, x.n, x.m}, apart ? x.wgrad_seconds : x.seconds / 2);
    }
  }
  return g;
}

// A measured rate above the preset's peak means the preset is wrong, not the device fast.
void check_below_peak(const FitContext& c, const ShapeKey& key, const Sums& v, const char* where) {
  if (v.first / (v.second * c.peak) <= 1) return;
  throw InputError(c.src, "gemm " + key.role + " " + dims(key.m, key.n, key.k),
                   "measured " + fmt(v.first / v.second / 1e12) + " TFLOP/s" + where +
                       ", above the GPU preset's " + to_string(c.job.dtype) + " peak " +
                       fmt(c.peak / 1e12) + " TFLOP/s: the preset understates the device");
}

// gemm_efficiency_by_shape (cold and warm) and the table by smallest dimension aggregating it.
void fit_gemms(const FitContext& c, const GemmSums& g, EfficiencyProfile& p) {
  p.gemm_efficiency_by_shape.clear();
  p.gemm_efficiency_by_min_dim.clear();
  std::map<double, Sums> by_min_dim;
  for (const auto& [key, v] : g.cold) {
    check_below_peak(c, key, v, "");
    const double eff = v.first / (v.second * c.peak);
    double warm_eff = 0;
    if (auto w = g.warm.find(key); w != g.warm.end()) {
      check_below_peak(c, key, w->second, " in cache");
      warm_eff = w->second.first / (w->second.second * c.peak);
    }
    p.gemm_efficiency_by_shape.push_back({key.role, 1, key.m, key.n, key.k, eff, warm_eff});
    auto& d = by_min_dim[std::min({key.m, key.n, key.k})];
    d.first += v.first, d.second += v.second;
  }
  for (const auto& [dim, v] : by_min_dim)
    p.gemm_efficiency_by_min_dim.emplace_back(dim, v.first / (v.second * c.peak));
}

std::map<std::string, double> roofline_s(const FitContext& c, const ComputeSample& s) {
  return class_roofline_s(s.model, s.tp, s.micro_batch, false, c.cluster.gpu, c.job);
}

// Op classes over all models: the cost model's roofline of the same ops over the measured time
// (an efficiency; above 1 for a CPU whose caches beat the nominal bandwidth). Returns whether any
// class was measured.
bool fit_op_classes(const FitContext& c, const RawCalibration& raw, const EfficiencyProfile* base,
                    EfficiencyProfile& p) {
  std::map<std::string, Sums> cold, warm;  // roofline, measured seconds
  for (const ComputeSample& s : raw.compute) {
    const auto roof = roofline_s(c, s);
    for (const auto& [cls, t] : s.class_s) {
      auto it = roof.find(cls);
      if (it == roof.end()) continue;  // a kernel the cost model does not count (none today)
      cold[cls].first += it->second;
      cold[cls].second += t;
    }
    for (const auto& [cls, t] : s.class_warm_s) {
      auto it = roof.find(cls);
      if (it == roof.end() || t <= 0) continue;
      warm[cls].first += it->second;
      warm[cls].second += t;
    }
  }
  if (cold.empty() && !base)
    throw InputError(c.src, "compute", "no op-class measurements and no base profile to take them from");
  double roof_all = 0, meas_all = 0;
  for (const auto& [cls, v] : cold) {
    const double eff = v.first / v.second;
    if (eff > 100)
      throw InputError(c.src, "class " + cls,
                       "kernels ran 100x faster than the cost model's roofline: the GPU preset's bandwidth is wrong");
    p.op_class_efficiency[cls] = eff;
    // The attention cores (unfused or fused) are compute, not memory-bound: not in the fallback.
    const bool attention = cls == "attention" || cls == "attention.bwd" || cls == "flash_attention" ||
                           cls == "flash_attention.bwd";
    if (!attention) roof_all += v.first, meas_all += v.second;
  }
  for (const auto& [cls, v] : warm) p.op_class_efficiency_warm[cls] = std::min(100.0, v.first / v.second);
  // memory_bound_efficiency (the fallback for classes without an entry) stays a fraction.
  if (!cold.empty()) p.memory_bound_efficiency = meas_all > 0 ? std::min(1.0, roof_all / meas_all) : 0.5;
  return !cold.empty();
}

// Each model the microbenchmarks ran keeps its own class efficiencies (op_class_efficiency_by_layer):
// roofline over measured seconds summed over all its tp and micro-batch shards, as the aggregate.
void fit_per_layer(const FitContext& c, const RawCalibration& raw, EfficiencyProfile& p) {
  std::map<std::pair<std::string, LayerKey>, std::array<double, 3>> layers;  // roofline, cold s, warm s
  for (const ComputeSample& s : raw.compute) {
    const LayerKey key = layer_key(s.model);
    const auto roof = roofline_s(c, s);
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
}

void fit_optimizer(const FitContext& c, const RawCalibration& raw, EfficiencyProfile& p) {
  if (raw.optimizer.empty()) return;
  double roof = 0, meas = 0;
  for (const OptimizerSample& o : raw.optimizer) {
    roof += o.params * kOptimizerBytesPerParam / c.cluster.gpu.hbm_bandwidth_bytes_per_s;
    meas += o.seconds;
  }
  p.op_class_efficiency[kOptimizerClass] = std::min(1.0, roof / meas);
}

// One alpha-beta fit per (collective, group size); the first n ranks of the run span more than
// one node when n exceeds the cluster's GPUs per node. A fit replaces the base's of the same kind.
void fit_collectives(const FitContext& c, const RawCalibration& raw, const std::string& source_label,
                     EfficiencyProfile& p) {
  std::map<std::pair<int, int64_t>, std::vector<std::pair<double, double>>> comm;
  for (const CommSample& s : raw.comm)
    comm[{static_cast<int>(s.collective), s.ranks}].push_back({s.bytes, s.seconds});
  for (const auto& [key, pts] : comm) {
    const Collective coll = static_cast<Collective>(key.first);
    const bool inter = c.cluster.gpus_per_node > 0 && key.second > c.cluster.gpus_per_node;
    CollectiveFit f = fit_alpha_beta(coll, key.second, inter, pts, c.src,
                                     std::string(to_string(coll)) + " on " + std::to_string(key.second) + " ranks");
    f.source = source_label + ", " + std::to_string(pts.size()) + " sizes " +
               fmt(pts.front().first) + "-" + fmt(pts.back().first) + " B";
    std::erase_if(p.communication, [&](const CollectiveFit& b) {
      return b.collective == f.collective && b.ranks == f.ranks && b.inter_node == f.inter_node;
    });
    p.communication.push_back(f);
  }
}

void set_provenance(const FitContext& c, const RawCalibration& raw, EfficiencyProfile& p) {
  p.provenance.machine = raw.machine.value("host", std::string("unknown")) + " (" +
                         (c.cuda ? raw.machine.value("device", std::string("unknown device"))
                                 : std::to_string(raw.machine.value("cores", 0)) + " cores") +
                         ", " + raw.gemm_path + ")";
  p.provenance.backend = raw.backend;
  p.provenance.date = raw.date;
  p.provenance.tool = "parallax calibrate --backend " + raw.backend + " --np " + std::to_string(raw.ranks);
  p.provenance.threads_per_rank = raw.threads_per_rank;
  p.provenance.source_runs = {"microbenchmarks: " + std::to_string(raw.compute.size()) +
                              " model shapes, " + std::to_string(raw.comm.size()) + " collective points"};
}

// The profile's `source`: how each part was measured, in words.
std::string source_text(const FitContext& c, const RawCalibration& raw, const std::string& source_label,
                        bool classes_measured, const EfficiencyProfile* base, const EfficiencyProfile& p) {
  std::ostringstream s;
  s << source_label << " on " << p.provenance.machine << ", " << raw.ranks << " ranks";
  if (!c.cuda) s << " of " << raw.threads_per_rank << " thread(s)";
  s << ". GEMMs: the executor's "
    << (c.cuda ? "cublasGemmEx calls (bf16 operands, fp32 accumulation; forward NT to bf16, dgrad NN "
                 "and wgrad TN accumulating into bf16 and fp32; L2 flushed before each timed call; "
                 "dgrad and wgrad timed apart)"
               : "sgemm calls (forward as measured; dgrad and wgrad share their call's time)")
    << " on the linear-layer shapes of ";
  for (size_t i = 0; i < raw.compute.size(); ++i) {
    const ComputeSample& x = raw.compute[i];
    s << (i ? ", " : "") << x.model.name << " tp" << x.tp << " mbs" << x.micro_batch;
  }
  s << "; the table by smallest dimension aggregates them. ";
  if (classes_measured)
    s << "Op classes: measured kernel time against the cost model's roofline of the same ops on GPU "
         "preset "
      << c.cluster.gpu.name << " (its peak and bandwidth are nominal denominators), per model and "
      << "over all models. ";
  else
    s << "Op classes, optimizer, overlap and memory reserve: from profile " << (base ? base->name : "")
      << " (not measured by this sweep). ";
  if (p.cache_bytes_per_rank > 0)
    s << "Each kernel timed cold (caches flushed) and warm (the call repeated without a flush: its "
      << "data in the " << raw.machine.value("caches", std::string("caches"))
      << ", as between a trainer's consecutive ops); cache_bytes_per_rank is the last level's share of one core. ";
  s << "Collectives: " << (c.cuda ? "NCCL (nccl-tests conventions)" : "exec::Comm over MPI")
    << ", alpha-beta per collective and group size.";
  if (!c.cuda) s << " Overlap 0: the executor overlaps nothing.";
  return s.str();
}

}  // namespace

EfficiencyProfile fit_profile(const RawCalibration& raw, const ClusterSpec& cluster,
                              const std::string& name, const std::string& source_label,
                              const EfficiencyProfile* base) {
  FitContext c{cluster, "calibration of " + cluster.name, raw.backend == "cuda", {}, 0};
  if (raw.compute.empty()) throw InputError(c.src, "compute", "no compute measurements to fit");
  c.job = executed_job(c.job, c.cuda ? "bf16" : "fp32");
  c.peak = cluster.gpu.peak(c.job.dtype);
  if (c.peak <= 0)
    throw InputError(c.src, "gpu", "GPU " + cluster.gpu.name + " has no " + to_string(c.job.dtype) + " peak");

  EfficiencyProfile p = base ? *base : EfficiencyProfile{};
  p.name = name;
  fit_gemms(c, sum_gemms(raw), p);
  const bool classes_measured = fit_op_classes(c, raw, base, p);
  fit_per_layer(c, raw, p);
  if (raw.machine.contains("llc_bytes"))
    p.cache_bytes_per_rank = raw.machine.value("llc_bytes", 0.0) / std::max(1.0, raw.machine.value("llc_cpus", 1.0));
  fit_optimizer(c, raw, p);
  fit_collectives(c, raw, source_label, p);
  p.frameworks[kExecutorFramework] = SoftwareStack{1.0};
  if (raw.machine.contains("process_overhead_bytes"))
    p.memory_reserve_bytes = raw.machine.value("process_overhead_bytes", 0.0);
  set_provenance(c, raw, p);
  p.source = source_text(c, raw, source_label, classes_measured, base, p);
  return p;
}

}  // namespace parallax::calib
