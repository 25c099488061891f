#include "parallax/validation/profile_fit.hpp"

#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

// Grid values as k / 1000 so that they print as written (0.69, not 0.6900000000000001).
double milli(int k) { return static_cast<double>(k) / 1000.0; }

struct Curve {
  int e_max_milli = 600;
  double d_half = 48;
  int mem_milli = 750;
};

void apply(EfficiencyProfile& p, const Curve& c) {
  p.gemm_curve_e_max = milli(c.e_max_milli);
  p.gemm_curve_d_half = c.d_half;
  p.gemm_efficiency_by_min_dim = gemm_table(p.gemm_curve_e_max, c.d_half);
  p.memory_bound_efficiency = milli(c.mem_milli);
}

// A row and the plans its unpublished fields allow, their op lists built once for every trial:
// every evaluation predicts the fastest of them under the profile being evaluated, as validate does.
using Row = PreparedRow;

// |error| of each row (error_of(i)) on every core, summed in row order afterwards: the same bits as
// one thread. The rows' topologies are shared (their plan analyses are memoised under a lock); an
// exception in any row is rethrown here.
double sum_of_abs_errors(size_t n, const std::function<double(size_t)>& error_of) {
  std::vector<double> abs_errors(n);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        abs_errors[i] = std::fabs(error_of(i));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  double sum = 0;
  for (const double e : abs_errors) sum += e;
  return sum;
}

double mean_abs_error(const std::vector<Row>& rows, const EfficiencyProfile& p) {
  const double sum = sum_of_abs_errors(rows.size(), [&](size_t i) { return best_candidate_error_pct(rows[i], p); });
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

// The best of `values` (first on ties) for one parameter set through `set`.
template <typename T>
T scan(const std::vector<T>& values, const std::function<double(T)>& cost) {
  T best = values.front();
  double best_cost = cost(best);
  for (size_t i = 1; i < values.size(); ++i) {
    const double c = cost(values[i]);
    if (c < best_cost) {
      best_cost = c;
      best = values[i];
    }
  }
  return best;
}

// Coarse steps of 50 (thousandths) between lo and hi, then steps of 5 around the best.
int coarse_fine(int lo, int hi, const std::function<double(int)>& cost) {
  std::vector<int> coarse;
  for (int k = lo; k <= hi; k += 50) coarse.push_back(k);
  const int c = scan<int>(coarse, cost);
  std::vector<int> fine;
  for (int k = std::max(lo, c - 50); k <= std::min(hi, c + 50); k += 5) fine.push_back(k);
  return scan<int>(fine, cost);
}

// e_max alone, or with the memory efficiency (they trade off too): e_max's best (coarse, then
// fine steps) at every memory step, and the best pair.
Curve fit_emax_mem(const std::function<double(const Curve&)>& cost, Curve c, bool mem) {
  auto best_emax = [&](Curve x) {
    x.e_max_milli = coarse_fine(200, 950, [&](int k) { Curve y = x; y.e_max_milli = k; return cost(y); });
    return x;
  };
  if (!mem) return best_emax(c);
  Curve best = c;
  double best_cost = 0;
  for (int m = 400; m <= 950; m += 50) {
    Curve x = c;
    x.mem_milli = m;
    x = best_emax(x);
    const double e = cost(x);
    if (m == 400 || e < best_cost) {
      best_cost = e;
      best = x;
    }
  }
  return best;
}

// With the shape free, every d_half of the list is tried with its own best e_max and memory
// efficiency: e_max and d_half trade off along a valley that a descent one coordinate at a time
// stops in.
Curve fit_curve(const std::vector<Row>& rows, EfficiencyProfile p, Curve c, bool shape) {
  const std::function<double(const Curve&)> cost = [&](const Curve& x) {
    apply(p, x);
    return mean_abs_error(rows, p);
  };
  if (!shape) return fit_emax_mem(cost, c, false);
  Curve best;
  double best_cost = 0;
  bool first = true;
  for (double d : {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}) {
    Curve x = c;
    x.d_half = d;
    x = fit_emax_mem(cost, x, true);
    const double e = cost(x);
    if (first || e < best_cost) {
      best = x;
      best_cost = e;
      first = false;
    }
  }
  return best;
}

std::string format_pct(double x) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(2);
  o << x << "%";
  return o.str();
}

// The host's time per MoE layer and micro-batch (EfficiencyProfile::moe_layer_host_s), in steps of
// 0.1 ms: coarse steps of 1 ms from 0 to 30 ms, then 0.1 ms around the best (the first on ties, so
// rows the floor never binds leave it at 0).
double scan_moe_host_s(const std::vector<Row>& rows, std::vector<EfficiencyProfile> profiles) {
  const auto cost = [&](int tenths_ms) {
    for (EfficiencyProfile& p : profiles) p.moe_layer_host_s = tenths_ms / 1e4;
    return sum_of_abs_errors(rows.size(), [&](size_t i) { return best_candidate_error_pct(rows[i], profiles[i]); });
  };
  std::vector<int> coarse;
  for (int k = 0; k <= 300; k += 10) coarse.push_back(k);
  const int c = scan<int>(coarse, cost);
  std::vector<int> fine;
  for (int k = std::max(0, c - 10); k <= c + 10; ++k) fine.push_back(k);
  return scan<int>(fine, cost) / 1e4;
}

// The profile's `source`: what was fitted on which rows, and the in-sample error.
std::string fit_account(const ProfileFit& fit, const EfficiencyProfile& p, size_t ref_rows,
                        bool shape) {
  std::ostringstream src;
  src << "Fitted by `parallax fit` to " << fit.rows_used.size()
      << " rows of the validation corpus predicted with this profile (provenance.source_runs), "
         "never per row: GEMM efficiency e_max * d / (d + d_half) in the GEMM's smallest dimension "
         "d at full waves of the GPU's GEMM tiles (each GEMM also pays its wave quantization), e_max "
      << p.gemm_curve_e_max << ", d_half " << p.gemm_curve_d_half << ", memory-bound kernels "
      << p.memory_bound_efficiency << " of HBM bandwidth (fitted: " << fit.curve_fitted << ", on "
      << ref_rows << " rows" << (shape ? "" : "; the rest of the curve from the base profile")
      << "). Stack scales:";
  for (const auto& [k, s] : p.frameworks) {
    const auto it = fit.stacks.find(k);
    src << " " << k << " " << s.compute_efficiency_scale
        << (it == fit.stacks.end() ? " (fewer than 3 rows: not fitted)"
            : k == kReferenceStack ? " (reference)"
                                   : " (" + std::to_string(it->second.rows) + " rows)")
        << ";";
  }
  src << " overlap and memory reserve kept from the base profile.";
  if (!fit.rows_not_fitted.empty())
    src << " " << fit.rows_not_fitted.size()
        << " mixture-of-experts rows are predicted with this profile; they fit no GEMM or stack "
           "parameter.";
  if (!fit.moe_host_rows.empty()) {
    src << " Host time per MoE layer and micro-batch (moe_layer_host_s): " << format_ms(p.moe_layer_host_s)
        << ", fitted on the " << fit.moe_host_rows.size()
        << " mixture-of-experts rows of every GPU (host work: Megatron-Core's token dispatcher "
           "waits for the tokens per expert on the host in every MoE layer, so a layer takes the "
           "longer of its GPU work and the host's).";
  }
  src << " In-sample mean |error| "
      << format_pct(fit.in_sample.mean_abs_error_pct) << ", max "
      << format_pct(fit.in_sample.max_abs_error_pct)
      << "; out-of-sample figures: parallax validate --cross-validate source.";
  return src.str();
}

}  // namespace

std::vector<std::pair<double, double>> gemm_table(double e_max, double d_half) {
  std::vector<std::pair<double, double>> t;
  for (double d = 32; d <= 16384; d *= 2) {
    t.emplace_back(d, std::round(e_max * d / (d + d_half) * 1e4) / 1e4);
  }
  return t;
}

namespace {

// Steps 1 and 2 of fit_profile_to_runs: the curve and the stack scales, on this profile's dense
// rows. Leaves the in-sample error and the profile's source to finish_fit.
struct GpuFit {
  ProfileFit fit;
  size_t ref_rows = 0;
  bool shape = false;
};

GpuFit fit_gpu(const std::vector<PublishedRun>& runs, const EfficiencyProfile& base,
               const std::vector<std::string>& stacks, TopologyCache& topos) {
  GpuFit out;
  ProfileFit& fit = out.fit;
  EfficiencyProfile p = base;
  for (const std::string& s : stacks) p.frameworks[s].compute_efficiency_scale = 1;
  std::vector<const PublishedRun*> mine;
  for (const PublishedRun& r : runs) {
    if (r.cluster.profile != base.name) continue;
    // A mixture-of-experts row measures mechanisms of the MoE layer the cost model does not all
    // have (Megatron-Core's MoE README names a "CPU Overhead Bottleneck" of its many small
    // kernels); a stack scale or a curve fitted to it would move every dense prediction of the
    // stack by that gap. Such rows are predicted with the profile, and judged, but not fitted.
    if (r.model.is_moe()) {
      fit.rows_not_fitted.push_back(r.id);
      continue;
    }
    mine.push_back(&r);
    fit.rows_used.push_back(r.id);
    p.frameworks[r.stack].compute_efficiency_scale = 1;
  }
  if (mine.empty()) {
    fit.curve_fitted = "none";
    fit.profile = p;
    return out;  // nothing to fit on: the caller says so
  }
  // The curve's rows: the reference stack's, or with none, every row at scale 1 (the stacks'
  // scales are then fitted around that curve).
  size_t ref_rows = 0;
  for (const PublishedRun* r : mine) ref_rows += r->stack == kReferenceStack;
  const bool pooled = ref_rows == 0;
  if (pooled) ref_rows = mine.size();
  const bool shape = ref_rows >= kMinRowsForShape;
  fit.curve_fitted = ref_rows == 0 ? "none" : shape ? "e_max, d_half and memory efficiency" : "e_max";
  if (pooled && ref_rows > 0) fit.curve_fitted += " (no " + std::string(kReferenceStack) + " rows: on every stack's rows at scale 1)";
  Curve c;  // the fixed start
  if (!shape) {
    if (base.gemm_curve_e_max <= 0) {
      throw InputError("profile " + base.name, "$.gemm_efficiency_curve",
                       "is needed: fewer than " + std::to_string(kMinRowsForShape) +
                           " reference rows fit e_max only, on the base's curve shape");
    }
    c.e_max_milli = static_cast<int>(std::lround(base.gemm_curve_e_max * 1000));
    c.d_half = base.gemm_curve_d_half;
    c.mem_milli = static_cast<int>(std::lround(base.memory_bound_efficiency * 1000));
  }
  if (ref_rows > 0 || base.gemm_curve_e_max > 0) apply(p, c);
  std::vector<Row> ref;
  std::map<std::string, std::vector<Row>> by_stack;
  for (const PublishedRun* r : mine) {
    const Row row = prepare_row(*r, topos);
    if (pooled || r->stack == kReferenceStack) ref.push_back(row);
    if (r->stack != kReferenceStack) by_stack[r->stack].push_back(row);
  }
  if (!ref.empty()) {
    c = fit_curve(ref, p, c, shape);
    apply(p, c);
  }
  for (const auto& entry : by_stack) {
    const std::string& stack = entry.first;  // named, not bound: lambdas capture these
    const std::vector<Row>& stack_rows = entry.second;
    if (stack_rows.size() < kMinRowsForScale) continue;  // a scale on one or two rows is per-row
    EfficiencyProfile q = p;
    const int k = coarse_fine(200, 2000, [&](int m) {
      q.frameworks[stack].compute_efficiency_scale = milli(m);
      return mean_abs_error(stack_rows, q);
    });
    p.frameworks[stack].compute_efficiency_scale = milli(k);
    fit.stacks[stack] = {milli(k), stack_rows.size()};
  }
  if (!pooled && !ref.empty()) fit.stacks[kReferenceStack] = {1, ref.size()};
  fit.profile = p;
  out.ref_rows = ref_rows;
  out.shape = shape;
  return out;
}

// The in-sample error on the dense rows, the host time of step 3, and the profile's provenance.
ProfileFit finish_fit(GpuFit g, const MoeHostFit& host, const std::vector<PublishedRun>& runs,
                      const std::string& date, TopologyCache& topos) {
  ProfileFit& fit = g.fit;
  EfficiencyProfile& p = fit.profile;
  if (fit.rows_used.empty()) return fit;
  p.moe_layer_host_s = host.host_s;
  fit.moe_host_rows = host.rows;
  std::vector<ValidationRow> rows;
  for (const PublishedRun& r : runs) {
    if (r.cluster.profile == p.name && !r.model.is_moe()) rows.push_back(validate_run(r, p, topos));
  }
  fit.in_sample = summarize(rows);
  p.source = fit_account(fit, p, g.ref_rows, g.shape);
  p.provenance.machine = "none (fit to published measurements)";
  p.provenance.backend = "cost model";
  p.provenance.date = date;
  p.provenance.tool = "parallax fit";
  p.provenance.source_runs = fit.rows_used;
  return fit;
}

}  // namespace

std::string format_ms(double seconds) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << seconds * 1e3 << " ms";
  return o.str();
}

MoeHostFit fit_moe_host(const std::vector<PublishedRun>& runs,
                        const std::map<std::string, EfficiencyProfile>& profiles, TopologyCache& topos) {
  MoeHostFit out;
  std::map<std::string, EfficiencyProfile> loaded;  // the presets' profiles, read once each
  std::vector<Row> rows;
  std::vector<EfficiencyProfile> row_profiles;
  for (const PublishedRun& r : runs) {
    if (!r.model.is_moe()) continue;
    const std::string& name = r.cluster.profile;
    auto it = profiles.find(name);
    if (it == profiles.end()) {
      it = loaded.find(name);
      if (it == loaded.end()) {
        EfficiencyProfile p = load_profile(name);
        // A profile that carries a fit given here is that fit, not the preset's copy of it.
        const auto src = p.carries_fit_of.empty() ? profiles.end() : profiles.find(p.carries_fit_of);
        if (src != profiles.end()) p = carry_fit(p, src->second);
        it = loaded.emplace(name, std::move(p)).first;
      }
    }
    rows.push_back(prepare_row(r, topos));
    row_profiles.push_back(it->second);
    out.rows.push_back(r.id);
  }
  if (!rows.empty()) out.host_s = scan_moe_host_s(rows, std::move(row_profiles));
  return out;
}

ProfileFit fit_profile_to_runs(const std::vector<PublishedRun>& runs, const EfficiencyProfile& base,
                               const std::vector<std::string>& stacks, const std::string& date,
                               TopologyCache& topos) {
  if (!base.carries_fit_of.empty()) {
    throw InputError("profile " + base.name, "$.carries_fit_of",
                     "names " + base.carries_fit_of + ": this profile is that one's fit carried over, "
                     "so fit " + base.carries_fit_of + " and copy its efficiencies here");
  }
  GpuFit g = fit_gpu(runs, base, stacks, topos);
  if (g.fit.rows_used.empty()) return g.fit;
  const MoeHostFit host = fit_moe_host(runs, {{base.name, g.fit.profile}}, topos);
  return finish_fit(std::move(g), host, runs, date, topos);
}

std::map<std::string, ProfileFit> fit_profiles(const std::vector<PublishedRun>& runs,
                                               const std::vector<EfficiencyProfile>& bases,
                                               const std::vector<std::string>& stacks,
                                               const std::string& date, TopologyCache& topos) {
  // A base that carries another profile's fit is derived from that profile's fit on these rows,
  // which is made here even when only the carrier was asked for; never fitted on its own rows.
  std::vector<EfficiencyProfile> own, carriers;
  std::set<std::string> own_names;
  for (const EfficiencyProfile& b : bases) {
    if (b.carries_fit_of.empty()) own.push_back(b), own_names.insert(b.name);
    else carriers.push_back(b);
  }
  for (const EfficiencyProfile& c : carriers) {
    if (own_names.insert(c.carries_fit_of).second) own.push_back(load_profile(c.carries_fit_of));
  }
  std::map<std::string, GpuFit> gpu;
  std::map<std::string, EfficiencyProfile> fitted;
  for (const EfficiencyProfile& b : own) {
    if (!b.carries_fit_of.empty()) {
      throw InputError("profile " + b.name, "$.carries_fit_of",
                       "must be empty in a profile another one carries the fit of");
    }
    GpuFit g = fit_gpu(runs, b, stacks, topos);
    if (!g.fit.rows_used.empty()) fitted[b.name] = g.fit.profile;
    gpu.emplace(b.name, std::move(g));
  }
  for (const EfficiencyProfile& c : carriers) {
    auto src = fitted.find(c.carries_fit_of);
    if (src != fitted.end()) fitted[c.name] = carry_fit(c, src->second);
  }
  const MoeHostFit host = fitted.empty() ? MoeHostFit{} : fit_moe_host(runs, fitted, topos);
  std::map<std::string, ProfileFit> all;
  for (auto& [name, g] : gpu) all.emplace(name, finish_fit(std::move(g), host, runs, date, topos));
  std::map<std::string, ProfileFit> out;
  for (const EfficiencyProfile& b : bases) {
    if (b.carries_fit_of.empty()) {
      out[b.name] = all.at(b.name);
      continue;
    }
    ProfileFit f = all.at(b.carries_fit_of);  // its rows, stacks and host time; the carrier's name
    f.profile = carry_fit(b, f.profile);
    out[b.name] = std::move(f);
  }
  return out;
}

}  // namespace parallax
