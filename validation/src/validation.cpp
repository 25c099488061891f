#include "parallax/validation/validation.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "parallax/core/divisors.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {
namespace {

std::string describe_fill(const PublishedRun& run, const PlanSpec& p) {
  std::string s;
  auto add = [&s](const std::string& x) { s += (s.empty() ? "" : "; ") + x; };
  if (run.free_micro_batch) add("micro_batch " + std::to_string(p.micro_batch));
  if (run.free_recompute) add(std::string("recompute ") + to_string(p.recompute));
  if (run.free_sequence_parallel) add(std::string("sequence_parallel ") + (p.sequence_parallel ? "on" : "off"));
  if (run.free_vpp) {
    add(p.vpp > 1 ? "interleaved vpp " + std::to_string(p.vpp) : std::string("1F1B (vpp 1)"));
  }
  if (!s.empty()) s = "unpublished, chose the fastest: " + s;
  for (const std::string& a : run.assumed) add(a);
  return s;
}

}  // namespace

const Topology& TopologyCache::get(const ClusterSpec& c) {
  const std::string key = c.name + "/" + std::to_string(c.nodes);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) it = graphs_.emplace(key, std::make_unique<Topology>(c)).first;
  return *it->second;
}

std::vector<PlanSpec> plan_candidates(const PublishedRun& run) {
  std::vector<PlanSpec> out{run.plan};
  auto expand = [&out](auto&& vary) {
    std::vector<PlanSpec> next;
    for (const PlanSpec& p : out) vary(p, next);
    out = std::move(next);
  };
  if (run.free_micro_batch) {
    const int64_t per_replica = run.job.global_batch / run.plan.dp;
    expand([&](const PlanSpec& p, std::vector<PlanSpec>& next) {
      for (int64_t mb : divisors(per_replica)) {
        if (mb > 64) break;
        PlanSpec c = p;
        c.micro_batch = mb;
        c.num_micro_batches = per_replica / mb;
        next.push_back(c);
      }
    });
  }
  if (run.free_recompute) {
    expand([](const PlanSpec& p, std::vector<PlanSpec>& next) {
      for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        PlanSpec c = p;
        c.recompute = r;
        next.push_back(c);
      }
    });
  }
  if (run.free_sequence_parallel) {
    expand([](const PlanSpec& p, std::vector<PlanSpec>& next) {
      for (bool sp : {false, true}) {
        PlanSpec c = p;
        c.sequence_parallel = sp;
        next.push_back(c);
      }
    });
  }
  if (run.free_vpp && run.plan.first_stage_layers == 0 && run.plan.last_stage_layers == 0) {
    const int64_t per_stage = run.model.layers / run.plan.pp;
    expand([&](const PlanSpec& p, std::vector<PlanSpec>& next) {
      if (!run.interleaved_only) next.push_back(p);
      // Megatron-LM's interleaved schedule runs micro-batches in groups of pp.
      if (p.num_micro_batches % p.pp != 0) return;
      for (int64_t v = 2; v <= per_stage; ++v) {
        if (per_stage % v != 0) continue;
        PlanSpec c = p;
        c.vpp = v;
        c.schedule = Schedule::interleaved;
        next.push_back(c);
      }
    });
  }
  return out;
}

ValidationRow predict_run(const PublishedRun& run, const PlanSpec& plan,
                          const EfficiencyProfile& prof, TopologyCache& topos) {
  ValidationRow out;
  out.id = run.id;
  out.source = run.source;
  out.group = run.group;
  out.stack = run.stack;
  out.gpu = run.gpu;
  out.dtype = run.dtype;
  out.sweep = run.sweep;
  out.measured = run.measured;
  out.measured_iteration_time_s = run.measured_iteration_time_s;
  const Prediction pr = predict(run.model, topos.get(run.cluster), run.job, plan, prof);
  out.predicted_iteration_time_s = pr.iteration_time_s;
  const double ratio = run.measured_iteration_time_s / pr.iteration_time_s;
  out.predicted_value = run.measured.metric == "iteration_time_s" ? pr.iteration_time_s
                                                                   : run.measured.value * ratio;
  out.error_pct = (ratio - 1) * 100;
  out.plan = plan;
  out.fits = pr.fits;
  out.predicted_peak_memory_bytes = pr.peak_bytes;
  out.measured_peak_memory_bytes = run.measured_peak_memory_bytes;
  out.model = run.model;
  out.cluster = run.cluster;
  out.job = run.job;
  return out;
}

std::vector<PlanSpec> valid_candidates(const PublishedRun& run) {
  std::vector<PlanSpec> out;
  for (const PlanSpec& cand : plan_candidates(run)) {
    try {
      validate_plan(run.model, run.cluster, run.job, cand, run.gpus, run.id);
    } catch (const InputError&) {
      continue;  // a setting this shape cannot take (e.g. a vpp the stages do not divide)
    }
    out.push_back(cand);
  }
  if (out.empty()) throw InputError(run.source, run.id, "no candidate plan passes the plan rules");
  return out;
}

ValidationRow best_candidate(const PublishedRun& run, const std::vector<PlanSpec>& candidates,
                             const EfficiencyProfile& prof, TopologyCache& topos) {
  std::optional<ValidationRow> best;
  for (const PlanSpec& cand : candidates) {
    ValidationRow r = predict_run(run, cand, prof, topos);
    const bool better = !best || (r.fits && !best->fits) ||
                        (r.fits == best->fits &&
                         r.predicted_iteration_time_s < best->predicted_iteration_time_s);
    if (better) best = std::move(r);
  }
  return *best;
}

PreparedRow prepare_row(const PublishedRun& run, TopologyCache& topos) {
  PreparedRow out;
  out.run = &run;
  out.topo = &topos.get(run.cluster);
  out.plans = valid_candidates(run);
  out.ops.reserve(out.plans.size());
  for (const PlanSpec& p : out.plans) out.ops.push_back(plan_ops(run.model, run.job, p, run.cluster.gpu));
  return out;
}

double best_candidate_error_pct(const PreparedRow& row, const EfficiencyProfile& prof) {
  const PublishedRun& run = *row.run;
  bool have = false, best_fits = false;
  double best_s = 0;
  for (size_t i = 0; i < row.plans.size(); ++i) {
    const Prediction pr = predict(run.model, *row.topo, run.job, row.plans[i], prof, row.ops[i]);
    // best_candidate's order: fitting plans first, then the faster.
    const bool better = !have || (pr.fits && !best_fits) ||
                        (pr.fits == best_fits && pr.iteration_time_s < best_s);
    if (better) {
      have = true;
      best_fits = pr.fits;
      best_s = pr.iteration_time_s;
    }
  }
  // predict_run's error: measured time / predicted time - 1.
  const double ratio = run.measured_iteration_time_s / best_s;
  return (ratio - 1) * 100;
}

ValidationRow validate_run(const PublishedRun& run, const EfficiencyProfile& prof,
                           TopologyCache& topos) {
  ValidationRow best = best_candidate(run, valid_candidates(run), prof, topos);
  best.filled = describe_fill(run, best.plan);
  best.profile = prof;
  return best;
}

namespace {

// Mean and max of absolute errors in percent.
ErrorSummary summary_of(const std::vector<double>& abs_errors_pct) {
  ErrorSummary s;
  s.rows = abs_errors_pct.size();
  double sum = 0;
  for (const double e : abs_errors_pct) {
    sum += e;
    s.max_abs_error_pct = std::max(s.max_abs_error_pct, e);
  }
  s.mean_abs_error_pct = s.rows == 0 ? 0 : sum / static_cast<double>(s.rows);
  return s;
}

}  // namespace

ErrorSummary summarize(const std::vector<ValidationRow>& rows) {
  std::vector<double> errors;
  errors.reserve(rows.size());
  for (const ValidationRow& r : rows) errors.push_back(std::fabs(r.error_pct));
  return summary_of(errors);
}

ErrorSummary summarize_memory(const std::vector<ValidationRow>& rows) {
  std::vector<double> errors;
  for (const ValidationRow& r : rows)
    if (r.measured_peak_memory_bytes > 0)
      errors.push_back(std::fabs(r.predicted_peak_memory_bytes / r.measured_peak_memory_bytes - 1) * 100);
  return summary_of(errors);
}

ValidationReport validate_corpus(const Corpus& corpus,
                                 const std::optional<EfficiencyProfile>& profile_override) {
  ValidationReport rep;
  rep.unsupported = corpus.unsupported;
  TopologyCache topos;
  std::map<std::string, EfficiencyProfile> profiles;
  for (const PublishedRun& run : corpus.runs) {
    const std::string& name = run.cluster.profile;
    if (!profile_override && !profiles.count(name)) profiles[name] = load_profile(name);
    const EfficiencyProfile& prof = profile_override ? *profile_override : profiles.at(name);
    if (!prof.frameworks.count(run.stack)) {
      rep.unsupported.push_back({run.id, run.source, "profile " + prof.name + " has no entry for stack " + run.stack});
      continue;
    }
    rep.rows.push_back(validate_run(run, prof, topos));
  }
  rep.summary = summarize(rep.rows);
  return rep;
}

}  // namespace parallax
