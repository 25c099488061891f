#include "parallax/planner/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "parallax/topologies/cluster_size.hpp"

namespace parallax {

double tokens_or_default(const JobSpec& job, const ModelSpec& model) {
  return job.tokens > 0 ? job.tokens : kDefaultTokensPerParam * model_params(model);
}

double days_to_train(const RankedPlan& r, double tokens, int64_t seq_len, int64_t global_batch) {
  const double tokens_per_s =
      static_cast<double>(global_batch * seq_len) / r.time_s;  // the ranking (refined) time
  return tokens / tokens_per_s / 86400;
}

std::vector<CapacityRow> capacity_sweep(const PlannerInputs& base,
                                        const std::vector<int64_t>& gpu_counts, double tokens,
                                        double price_per_gpu_hour_usd) {
  std::vector<CapacityRow> rows;
  double first_per_gpu = 0;
  bool knee_marked = false;
  // One graph per cluster as the GPU counts see it (their analyses are memoised): the same for
  // every count but those that take NVLink domains in segments (with_job_segments).
  std::map<std::string, std::unique_ptr<Topology>> topos;
  for (int64_t n : gpu_counts) {
    CapacityRow row;
    row.gpus = n;
    PlannerInputs in = base;
    in.gpus = n;
    in.cluster = with_job_segments(base.given_cluster(), n, "command line", "--gpus");
    in.whole_cluster = in.cluster.name != base.given_cluster().name
                           ? std::optional<ClusterSpec>(base.given_cluster())
                           : std::nullopt;
    row.cluster = in.cluster.name;
    std::unique_ptr<Topology>& graph = topos[in.cluster.name];
    if (!graph) graph = std::make_unique<Topology>(in.cluster);
    const Topology& topo = *graph;
    // The top few are re-timed by the event simulator, as `parallax plan` does.
    in.top_k = std::min<int64_t>(in.top_k, 8);
    const SearchResult res = search_plans(in, topo, simulator_refiner(in));
    if (res.plans.empty()) {
      row.no_plan_reason = res.evaluated == 0 ? "no plan passes the divisibility/trainer rules"
                                              : "no admitted plan fits in memory";
      rows.push_back(row);
      continue;
    }
    row.best = res.plans.front();
    row.days = days_to_train(*row.best, tokens, in.model.seq_len, in.job.global_batch);
    row.gpu_hours = row.days * 24 * static_cast<double>(n);
    row.cost_usd = row.gpu_hours * price_per_gpu_hour_usd;
    // Per-GPU throughput at the ranking (simulator-refined) time, the time the days come from:
    // the analytic prediction's tokens/s would rate a row by a time the table does not show.
    const double tokens_per_s =
        static_cast<double>(in.job.global_batch * in.model.seq_len) / row.best->time_s;
    const double per_gpu = tokens_per_s / static_cast<double>(n);
    if (first_per_gpu == 0) first_per_gpu = per_gpu;
    row.scaling_efficiency = per_gpu / first_per_gpu;
    if (!knee_marked && row.scaling_efficiency < 0.8) {
      row.knee = true;
      knee_marked = true;
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<FamilyMember> model_family(const std::string& name) {
  const nlohmann::json j = preset_json("families", name);
  const std::string src = "preset families/" + name;
  JsonObjectReader r(j, src);
  r.get_string("name");
  r.get_string("source");
  const int64_t seq = r.get_int("seq_len", 1, 1 << 24);
  const int64_t vocab = r.get_int("vocab", 1, 1 << 24);
  const int64_t head_dim = r.get_int("head_dim", 1, 1 << 16);
  const int64_t step = r.get_int("hidden_step", 1, 1 << 20);
  const nlohmann::json& anchors = r.raw("anchors");
  r.finish();
  std::vector<std::pair<double, double>> pts;  // (hidden, layers)
  for (const auto& a : anchors) {
    if (!a.is_array() || a.size() != 2 || !a[0].is_number_integer() || !a[1].is_number_integer()) {
      throw InputError(src, "$.anchors", "each anchor must be [layers, hidden] integers");
    }
    pts.emplace_back(a[1].get<double>(), a[0].get<double>());
  }
  if (pts.size() < 2) throw InputError(src, "$.anchors", "needs at least two anchors");
  std::vector<FamilyMember> out;
  auto add = [&](double hidden, double layers) {
    ModelSpec m;
    m.hidden = static_cast<int64_t>(hidden);
    m.layers = static_cast<int64_t>(std::lround(layers));
    m.heads = m.hidden / head_dim;
    m.kv_heads = m.heads;
    m.ffn_hidden = 4 * m.hidden;
    m.seq_len = seq;
    m.vocab = vocab;
    m.name = name + "-L" + std::to_string(m.layers) + "-h" + std::to_string(m.hidden);
    out.push_back({m, model_params(m)});
  };
  for (size_t i = 0; i + 1 < pts.size(); ++i) {
    const auto [h0, l0] = pts[i];
    const auto [h1, l1] = pts[i + 1];
    add(h0, l0);
    // Members strictly between the anchors, on multiples of the hidden step.
    for (double h = std::floor(h0 / static_cast<double>(step) + 1) * static_cast<double>(step);
         h < h1; h += static_cast<double>(step)) {
      add(h, l0 + (l1 - l0) * (h - h0) / (h1 - h0));
    }
  }
  add(pts.back().first, pts.back().second);
  return out;
}

namespace {

// Best (fewest GPU-hours) GPU count for one member, among counts that finish within max_days.
BudgetCandidate best_count(const BudgetInputs& in, const Topology& topo, const FamilyMember& fm,
                           double tokens) {
  BudgetCandidate best;
  best.member = fm;
  best.tokens = tokens;
  const ClusterSpec& cluster = in.planner.cluster;
  for (int64_t n = cluster.gpus_per_node; n <= cluster.total_gpus(); n *= 2) {
    PlannerInputs pi = in.planner;
    pi.model = fm.model;
    pi.gpus = n;
    const SearchResult res = search_plans(pi, topo);
    if (res.plans.empty()) continue;
    const RankedPlan& r = res.plans.front();
    const double days = days_to_train(r, tokens, fm.model.seq_len, pi.job.global_batch);
    if (days > in.max_days) continue;
    const double hours = days * 24 * static_cast<double>(n);
    if (!best.plan || hours < best.gpu_hours) {
      best.plan = r;
      best.gpus = n;
      best.gpu_hours = hours;
      best.days = days;
    }
  }
  return best;
}

}  // namespace

BudgetAnswer budget_search(const BudgetInputs& in) {
  BudgetAnswer out;
  const Topology topo(in.planner.cluster);  // built once: every member and GPU count shares its analyses
  int misses = 0;
  for (const FamilyMember& fm : model_family(in.family)) {
    const double tokens = in.tokens > 0 ? in.tokens : in.tokens_per_param * fm.params;
    BudgetCandidate c = best_count(in, topo, fm, tokens);
    if (!c.plan) {
      // No runnable plan within max_days (e.g. layers with few divisors): try the next member,
      // but two in a row past an answer mean the family has outgrown the cluster.
      if (out.answer && ++misses >= 2) break;
      continue;
    }
    misses = 0;
    if (c.gpu_hours <= in.budget_gpu_hours) {
      out.answer = c;
      continue;
    }
    // Members grow in size and cost: the first one over budget ends the search.
    out.next_larger = c;
    break;
  }
  return out;
}

}  // namespace parallax
