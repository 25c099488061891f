#include "parallax/calibration/closed_loop.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/nccl_tests_collective.hpp"
#include "parallax/core/error.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/stage_time.hpp"
#include "parallax/topologies/topology.hpp"

namespace parallax::calib {

namespace {

// Ops of one micro-batch on pipeline rank `stage` (all its chunks), recompute included.
std::vector<Op> stage_ops(const ModelSpec& m, const JobSpec& j, const PlanSpec& p, int64_t stage) {
  const ShardShape sh = shard_shape(m, j, p);
  const int64_t layers = stage_layers(m.layers, p, stage);
  const int64_t rec = p.recompute == Recompute::full
                          ? (p.recompute_layers > 0 ? std::min(p.recompute_layers, layers) : layers)
                          : 0;
  std::vector<Op> out;
  const std::vector<Op> with = layer_ops(m, sh, p.recompute);
  const std::vector<Op> plain = layer_ops(m, sh, p.recompute == Recompute::full ? Recompute::none : p.recompute);
  for (int64_t l = 0; l < layers; ++l)
    for (const Op& op : (l < rec ? with : plain)) out.push_back(op);
  if (stage == 0)
    for (const Op& op : embedding_ops(m, sh)) out.push_back(op);
  if (stage == p.pp - 1)
    for (const Op& op : head_ops(m, sh)) out.push_back(op);
  return out;
}

void check_profile_fits_run(const EfficiencyProfile& prof, const Measurements& m) {
  const Provenance& v = prof.provenance;
  if (v.backend != "cpu" && v.backend != "cuda") return;  // a fitted preset: nothing to check
  if (v.backend != m.backend)
    throw InputError(m.source, "$.backend",
                     "the run used backend " + m.backend + " but profile " + prof.name +
                         " was measured on " + v.backend);
  if (v.threads_per_rank > 0 && m.threads_per_rank > 0 && v.threads_per_rank != m.threads_per_rank)
    throw InputError(m.source, "$.machine.threads_per_rank",
                     "the run used " + std::to_string(m.threads_per_rank) +
                         " threads per rank but profile " + prof.name + " was measured with " +
                         std::to_string(v.threads_per_rank) + " (run with --threads " +
                         std::to_string(v.threads_per_rank) + ")");
}

std::string describe(const PlanFile& f) {
  const PlanSpec& p = f.plan;
  std::ostringstream s;
  s << f.model.name << " tp" << p.tp << " pp" << p.pp << " dp" << p.dp;
  if (p.cp > 1) s << " cp" << p.cp;
  if (p.ep > 1) s << " ep" << p.ep;
  if (p.vpp > 1) s << " vpp" << p.vpp;
  s << " mbs" << p.micro_batch << " m" << p.num_micro_batches << " " << to_string(p.schedule)
    << " " << to_string(p.recompute) << (p.sequence_parallel ? " sp" : "")
    << (p.zero ? " zero" + std::to_string(p.zero) : "");
  return s.str();
}

}  // namespace

double Comparison::iteration_error() const {
  for (const CompareRow& r : rows)
    if (r.kind == "iteration") return r.error();
  return 0;
}

Comparison compare(const Measurements& m, const EfficiencyProfile& prof) {
  check_profile_fits_run(prof, m);
  const PlanFile& f = m.plan;
  const PlanSpec& p = f.plan;
  const JobSpec job = executed_job(f.job, m.executed_dtype);
  prof.framework(job.framework);
  const Topology topo(f.cluster);
  const Prediction pr = predict(f.model, topo, job, p, prof);
  const IterationCosts ic = iteration_costs(f.model, topo, job, p, prof);
  Comparison c;
  c.plan = describe(f);
  std::string note = std::to_string(m.iteration_s.size()) + " steps, first excluded";
  if (prof.cache_bytes_per_rank > 0)
    note += "; working set " + std::to_string(static_cast<int>(std::lround(100 * ic.cache_fraction))) +
            "% in cache";
  c.rows.push_back({"iteration", "step time", pr.iteration_time_s, m.mean_iteration_s(), note});

  const double steps = static_cast<double>(m.iteration_s.size());
  const double mb = static_cast<double>(p.num_micro_batches);
  const LayerKey layer = layer_key(f.model, p.tp);
  const double n = static_cast<double>(m.ranks.size());
  std::map<std::string, std::pair<double, double>> classes, colls;  // predicted, measured
  for (const MeasuredRank& r : m.ranks) {
    for (const Op& op : stage_ops(f.model, job, p, r.pp_rank))
      classes[op.op_class].first += mb * op_time_s(op, f.cluster.gpu, job, prof, ic.cache_fraction, layer) / n;
    const double params = stage_params_per_rank(f.model, p, r.pp_rank) / static_cast<double>(p.zero >= 1 ? p.dp : 1);
    classes[kOptimizerClass].first += optimizer_time_s(params, f.cluster.gpu, job, prof) / n;
    for (const MeasuredOp& op : r.ops)
      if (!op.op_class.empty()) classes[op.op_class].second += op.total_s / steps / n;
    const size_t k = static_cast<size_t>(r.pp_rank);
    // The stage's collectives per micro-batch (kStageTerms): context parallelism's key/value
    // exchange and a mixture of experts' token all-to-alls beside TP.
    for (const StageTermInfo& term : kStageTerms) {
      if (term.measured_group != nullptr) colls[term.measured_group].first += mb * term_s(ic.stages[k], term) / n;
    }
    // "dp" also holds the tied-embedding all-reduce between the first and last stage.
    const bool tied_end = p.pp > 1 && f.model.tied_embeddings && (k == 0 || k + 1 == ic.stages.size());
    colls["dp"].first += (ic.dp_s[k] + (tied_end ? ic.embedding_sync_s : 0)) / n;
    colls["pp"].first += (p.pp > 1 ? 2 * mb * static_cast<double>(p.vpp) * ic.p2p_s : 0) / n;
    for (const MeasuredCollective& x : r.collectives) {
      // The experts' gradient all-reduce (edp) is part of the predicted data-parallel time.
      const std::string g = x.group == "embedding" || x.group == "edp" ? "dp" : x.group;
      colls[g].second += x.total_s / steps / n;
    }
  }
  for (const auto& [cls, v] : classes)
    if (v.second > 0) c.rows.push_back({"op class", cls, v.first, v.second, ""});
  for (const auto& [g, v] : colls)
    if (v.second > 0)
      c.rows.push_back({"collective", g, v.first, v.second,
                        g == "pp" ? "measured send+recv includes waiting for the other stage" : ""});
  return c;
}

// A refit keeps the profile's cold/warm ratio of a shape or class and scales both so that the
// blend iteration_costs uses at each run's cache fraction h reproduces the measured time:
// model seconds at efficiency 1 over the blend h / warm + (1 - h) / cold, summed over runs,
// against the measured seconds.
namespace {
struct RefitAcc {
  double ideal_s = 0;     // seconds at efficiency 1 (peak or roofline)
  double model_s = 0;     // seconds the profile predicts (blended)
  double measured_s = 0;
};
double blend(double h, double cold, double warm) {
  return warm > 0 && h > 0 ? h / warm + (1 - h) / cold : 1 / cold;
}

using ShapeAccs = std::map<std::tuple<std::string, double, double, double>, RefitAcc>;
using ClassAccs = std::map<std::pair<std::string, LayerKey>, RefitAcc>;

// One run's GEMM and op-class seconds: measured, at efficiency 1, and as the base profile
// predicts them at the run's cache fraction.
void accumulate_run(const EfficiencyProfile& base, const Measurements& m, ShapeAccs& shapes,
                    ClassAccs& classes) {
  check_profile_fits_run(base, m);
  const PlanFile& f = m.plan;
  const PlanSpec& p = f.plan;
  const JobSpec job = executed_job(f.job, m.executed_dtype);
  const double peak = f.cluster.gpu.peak(job.dtype);
  const double steps = static_cast<double>(m.iteration_s.size());
  const double h = cache_resident_fraction(f.model, job, p, base);
  const LayerKey layer = layer_key(f.model, p.tp);
  auto add_shape = [&](const std::string& role, double mm, double nn, double kk, double ideal, double secs) {
    RefitAcc& a = shapes[{role, mm, nn, kk}];
    a.ideal_s += ideal, a.measured_s += secs;
    if (const GemmShapeEfficiency* e = base.gemm_shape(role, 1, mm, nn, kk))
      a.model_s += ideal * blend(h, e->efficiency, e->warm_efficiency);
  };
  for (const MeasuredRank& r : m.ranks) {
    for (const MeasuredOp& op : r.ops) {
      if (op.op_class == "gemm" && op.calls > 0) {
        double N = 0, C = 0, OC = 0;
        char x1 = 0, x2 = 0;
        std::istringstream in(op.shape);
        if (!(in >> N >> x1 >> C >> x2 >> OC) || x1 != 'x' || x2 != 'x')
          throw InputError(m.source, "$.ranks[" + std::to_string(r.rank) + "].ops " + op.name,
                           "a GEMM's shape must read MxKxN (got \"" + op.shape + "\")");
        // Seconds the GEMM would take at the peak, over the seconds it took.
        const double f1 = 2 * N * C * OC * static_cast<double>(op.calls) / peak;
        if (op.name.size() > 9 && op.name.compare(op.name.size() - 9, 9, "_backward") == 0) {
          add_shape("dgrad", N, C, OC, f1, op.total_s / 2);
          add_shape("wgrad", C, OC, N, f1, op.total_s / 2);
        } else {
          add_shape("forward", N, OC, C, f1, op.total_s);
        }
      } else if (!op.op_class.empty() && op.op_class != kOptimizerClass) {
        classes[{op.op_class, layer}].measured_s += op.total_s / steps;
      }
    }
    // The cost model's roofline of the same ops.
    for (const Op& op : stage_ops(f.model, job, p, r.pp_rank)) {
      if (std::string(op.op_class) == "gemm") continue;
      const double ideal = op_roofline_s(op, peak, f.cluster.gpu.hbm_bandwidth_bytes_per_s) *
                           static_cast<double>(p.num_micro_batches);
      RefitAcc& a = classes[{op.op_class, layer}];
      a.ideal_s += ideal;
      if (const ClassLayerEfficiency* e = base.class_layer(op.op_class, layer)) {
        a.model_s += ideal * blend(h, e->efficiency, e->warm_efficiency);
      } else if (auto c = base.op_class_efficiency.find(op.op_class); c != base.op_class_efficiency.end()) {
        auto w = base.op_class_efficiency_warm.find(op.op_class);
        a.model_s += ideal * blend(h, c->second, w == base.op_class_efficiency_warm.end() ? 0 : w->second);
      }
    }
  }
}

// GEMM shapes: scale the profile's entry (cold and warm alike) or add a new one.
void refit_gemms(const ShapeAccs& shapes, EfficiencyProfile& out) {
  for (const auto& [key, v] : shapes) {
    const auto& [role, mm, nn, kk] = key;
    if (!(v.measured_s > 0) || !(v.ideal_s > 0)) continue;
    bool found = false;
    for (GemmShapeEfficiency& g : out.gemm_efficiency_by_shape)
      if (g.role == role && g.m == mm && g.n == nn && g.k == kk) {
        const double k = v.model_s / v.measured_s;
        g.efficiency = std::min(1.0, g.efficiency * k);
        if (g.warm_efficiency > 0) g.warm_efficiency = std::min(1.0, g.warm_efficiency * k);
        found = true;
      }
    if (!found) out.gemm_efficiency_by_shape.push_back({role, 1, mm, nn, kk, std::min(1.0, v.ideal_s / v.measured_s), 0});
  }
}

// Op classes: a run of a model with its own entry scales that entry for the run's tp (a new
// entry keyed by the tp when the model's entry covers every tp); the other runs refit the
// class's aggregate (the efficiency of every model without an entry).
void refit_classes(const EfficiencyProfile& base, const ClassAccs& classes, EfficiencyProfile& out) {
  std::map<std::string, RefitAcc> aggregate;
  for (const auto& [key, v] : classes) {
    const auto& [cls, layer] = key;
    if (!(v.ideal_s > 0) || !(v.measured_s > 0)) continue;
    const ClassLayerEfficiency* base_entry = base.class_layer(cls, layer);
    if (!base_entry || !(v.model_s > 0)) {
      RefitAcc& a = aggregate[cls];
      a.ideal_s += v.ideal_s, a.model_s += v.model_s, a.measured_s += v.measured_s;
      continue;
    }
    ClassLayerEfficiency* e = nullptr;
    for (ClassLayerEfficiency& c : out.op_class_efficiency_by_layer)
      if (c.op_class == cls && c.layer == layer) e = &c;
    if (!e) {
      ClassLayerEfficiency c = *base_entry;
      c.layer = layer;
      out.op_class_efficiency_by_layer.push_back(c);
      e = &out.op_class_efficiency_by_layer.back();
    }
    const double k = v.model_s / v.measured_s;
    e->efficiency = std::min(100.0, e->efficiency * k);
    if (e->warm_efficiency > 0) e->warm_efficiency = std::min(100.0, e->warm_efficiency * k);
  }
  for (const auto& [cls, v] : aggregate) {
    auto c = out.op_class_efficiency.find(cls);
    if (c == out.op_class_efficiency.end() || !(v.model_s > 0)) {
      out.op_class_efficiency[cls] = std::min(100.0, v.ideal_s / v.measured_s);
      continue;
    }
    const double k = v.model_s / v.measured_s;
    c->second = std::min(100.0, c->second * k);
    if (auto w = out.op_class_efficiency_warm.find(cls); w != out.op_class_efficiency_warm.end())
      w->second = std::min(100.0, w->second * k);
  }
}

}  // namespace

EfficiencyProfile refit_from_measurements(const EfficiencyProfile& base,
                                          const std::vector<Measurements>& runs) {
  EfficiencyProfile out = base;
  ShapeAccs shapes;
  ClassAccs classes;
  for (const Measurements& m : runs) accumulate_run(base, m, shapes, classes);
  refit_gemms(shapes, out);
  refit_classes(base, classes, out);
  // Collectives are not refitted from runs: the executor times a collective from call to
  // return, which includes waiting for the slowest rank of the group (compute skew), so a run
  // measures the schedule as much as the link. Microbenchmarks and nccl-tests fit them.
  for (const Measurements& m : runs) out.provenance.source_runs.push_back(m.source);
  out.source += " Refitted from executed runs: ";
  for (size_t i = 0; i < runs.size(); ++i) out.source += (i ? ", " : "") + describe(runs[i].plan);
  out.source += ".";
  return out;
}

namespace {

// Sizes at most this large constrain the latency term (nccl-tests' default sweep starts at 8 B;
// at 64 KiB an NVLink or IB all-reduce is still mostly latency).
constexpr double kSmallMessageBytes = 64 * 1024;

// One line when the sizes leave the fit's latency unconstrained: fewer than three sizes, or
// none small. "" otherwise.
std::string thin_fit_warning(const CollectiveFit& f, const std::vector<std::pair<double, double>>& pts,
                             const std::string& source) {
  std::set<double> sizes;
  for (const auto& p : pts) sizes.insert(p.first);
  const bool few = sizes.size() < 3;
  const bool small = !sizes.empty() && *sizes.begin() <= kSmallMessageBytes;
  if (!few && small) return "";
  std::ostringstream s;
  s << source << ": the " << to_string(f.collective) << " fit uses " << sizes.size() << " sizes ("
    << static_cast<int64_t>(*sizes.begin()) << "-" << static_cast<int64_t>(*sizes.rbegin()) << " B)";
  if (few) s << ", fewer than 3";
  s << (small ? "" : few ? " and none" : ", none") << (small ? "" : " <= 64 KiB") << ": its latency alpha = ";
  s.setf(std::ios::fixed);
  s.precision(1);
  s << f.alpha_s * 1e6 << " us is barely constrained (sweep from small sizes, e.g. nccl-tests -b 8)";
  return s.str();
}

}  // namespace

EfficiencyProfile refit_from_nccl_tests(const EfficiencyProfile& base, const NcclTestsRun& run,
                                        const std::string& source,
                                        const std::string& collective_override,
                                        std::vector<std::string>* warnings) {
  const NcclTestsIdentity id = identify_nccl_tests(run, collective_override, source);
  Collective c;
  if (id.collective == "all_reduce") c = Collective::all_reduce;
  else if (id.collective == "reduce_scatter") c = Collective::reduce_scatter;
  else if (id.collective == "all_gather") c = Collective::all_gather;
  else if (id.collective == "send_recv") c = Collective::send_recv;
  else
    throw InputError(source, "collective",
                     "the cost model uses all_reduce, reduce_scatter, all_gather and send_recv (got \"" +
                         id.collective + "\")");
  if (id.ranks < 2)
    throw InputError(source, "rank lines", "needs the '#  Rank N ...' lines to know the group size");
  if (id.nodes == 0)
    throw InputError(source, "rank lines",
                     "the table alone does not say how its " + std::to_string(id.ranks) +
                         " ranks sat on nodes, and a fit applies to one layout (nodes x GPUs per "
                         "node): keep the '#  Rank N ... on HOST device ...' lines above the table");
  std::vector<std::pair<double, double>> pts;
  for (const NcclTestsRow& r : run.rows) {
    const double t = std::isfinite(r.oop_time_us) ? r.oop_time_us : r.ip_time_us;
    if (std::isfinite(t) && t > 0 && r.size_bytes > 0) pts.push_back({r.size_bytes, t * 1e-6});
  }
  CollectiveFit f = fit_alpha_beta(c, id.ranks, id.nodes > 1, pts, source, id.collective);
  f.nodes = id.nodes;
  f.ranks_per_node = id.ranks_per_node;
  if (warnings) {
    if (const std::string w = thin_fit_warning(f, pts, source); !w.empty()) warnings->push_back(w);
  }
  f.source = "nccl-tests " + id.collective + "_perf " + (run.version.empty() ? "" : run.version + " ") +
             "(" + source + "), " + std::to_string(pts.size()) + " sizes";
  EfficiencyProfile out = base;
  bool replaced = false;
  for (CollectiveFit& x : out.communication)
    if (x.collective == c && x.inter_node == f.inter_node && x.ranks == f.ranks &&
        x.nodes == f.nodes && x.ranks_per_node == f.ranks_per_node)
      x = f, replaced = true;
  if (!replaced) out.communication.push_back(f);
  out.provenance.source_runs.push_back(source);
  std::ostringstream note;
  note << " " << to_string(c) << " on " << id.ranks << " ranks (" << id.nodes
       << " nodes) from nccl-tests output " << source << ".";
  out.source += note.str();
  return out;
}

EfficiencyProfile refit_from_megatron_log(const EfficiencyProfile& base, const MegatronLog& log,
                                          const PlanFile& plan, const std::string& source) {
  std::vector<double> ms;
  for (size_t i = log.iterations.size() > 1 ? 1 : 0; i < log.iterations.size(); ++i) {
    const MegatronIteration& it = log.iterations[i];
    if (it.global_batch > 0 && it.global_batch != plan.job.global_batch)
      throw InputError(source, "line " + std::to_string(it.line),
                       "global batch size " + std::to_string(it.global_batch) +
                           " does not match the plan's " + std::to_string(plan.job.global_batch) +
                           ": the plan does not match the log");
    if (std::isfinite(it.elapsed_ms)) ms.push_back(it.elapsed_ms);
  }
  if (ms.empty()) throw InputError(source, "iterations", "no iteration with an elapsed time");
  std::sort(ms.begin(), ms.end());
  const double target_s = ms[ms.size() / 2] / 1e3;
  const Topology topo(plan.cluster);
  EfficiencyProfile out = base;
  const std::string fw = plan.job.framework;
  out.framework(fw);
  auto time_at = [&](double scale) {
    out.frameworks[fw].compute_efficiency_scale = scale;
    return predict(plan.model, topo, plan.job, plan.plan, out).iteration_time_s;
  };
  double lo = 0.01, hi = 2.0;
  if (time_at(hi) > target_s || time_at(lo) < target_s)
    throw InputError(source, "elapsed time per iteration (ms)",
                     "median " + std::to_string(target_s * 1e3) +
                         " ms is outside what a compute scale in [0.01, 2] can explain for this plan");
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    (time_at(mid) > target_s ? lo : hi) = mid;
  }
  out.frameworks[fw].compute_efficiency_scale = std::sqrt(lo * hi);
  out.provenance.source_runs.push_back(source);
  out.source += " Framework " + fw + " scale refitted to " + source + " (median " +
                std::to_string(target_s * 1e3) + " ms per iteration).";
  return out;
}

}  // namespace parallax::calib
