#include "parallax/planner/planner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/plan_ops.hpp"
#include "parallax/costmodel/predict.hpp"

namespace parallax {
namespace {

// The shards' op lists of one search, each built once (costmodel/plan_ops.hpp): the plans of one
// tp, cp, micro-batch, sequence parallelism, expert split, dispatcher and recompute share them
// (model and job are the search's). Shared by the worker threads.
class ShardOpsCache {
 public:
  ShardOpsCache(const ModelSpec& m, const JobSpec& j, const GpuSpec& gpu) : m_(m), j_(j), gpu_(gpu) {}

  std::shared_ptr<const ShardOps> get(const PlanSpec& p) {
    const Key key{p.micro_batch, p.tp, p.cp, p.sequence_parallel, p.ep, expert_tp(p), p.moe_dispatcher, p.recompute};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = shards_.find(key);
      if (it != shards_.end()) return it->second;
    }
    std::shared_ptr<const ShardOps> ops = shard_ops(m_, j_, p, gpu_);
    std::lock_guard<std::mutex> lock(mutex_);
    return shards_.emplace(key, std::move(ops)).first->second;
  }

 private:
  // What shard_shape() reads of a plan, and the recompute mode.
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, int64_t, int64_t, MoeDispatcher, Recompute>;
  const ModelSpec& m_;
  const JobSpec& j_;
  const GpuSpec& gpu_;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const ShardOps>> shards_;
};

std::vector<RankedPlan> predict_all(const PlannerInputs& in, const Topology& topo,
                                    const std::vector<PlanSpec>& plans, const Progress& progress) {
  std::vector<RankedPlan> out(plans.size());
  ShardOpsCache shards(in.model, in.job, topo.spec().gpu);
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  const int64_t total = static_cast<int64_t>(plans.size());
  auto worker = [&] {
    for (int64_t i = next++; i < total; i = next++) {
      RankedPlan& r = out[static_cast<size_t>(i)];
      r.plan = plans[static_cast<size_t>(i)];
      // Memory first: a plan that does not fit is rejected whatever its time, so it is priced
      // only where the caller keeps the unfit plans (record_candidates); search_plans prices the
      // one it reports as closest to fitting.
      r.prediction = predict_memory(topo.spec(), in.job, r.plan, in.profile,
                                    stage_memory(in.model, in.job, r.plan));
      if (r.prediction.fits || in.options.record_candidates) {
        r.prediction = predict(in.model, topo, in.job, r.plan, in.profile,
                               PlanOps{shards.get(r.plan), std::move(r.prediction.memory)});
      }
      r.time_s = r.prediction.iteration_time_s;
      ++done;
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = in.threads > 0 ? static_cast<unsigned>(in.threads) : hw;
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  if (progress) {
    // The calling thread reports progress while the pool works, then joins the work.
    while (done.load() < total && pool.size() > 0) {
      progress(done.load(), total);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (progress) progress(total, total);
  return out;
}

}  // namespace

bool ranks_before(const RankedPlan& a, const RankedPlan& b) {
  if (std::fabs(a.time_s - b.time_s) > 1e-9 * std::max(a.time_s, b.time_s)) {
    return a.time_s < b.time_s;
  }
  return a.headroom_bytes() > b.headroom_bytes();
}

SearchResult search_plans(const PlannerInputs& in, const Refiner& refine,
                          const Progress& progress) {
  const Topology topo(in.cluster);
  return search_plans(in, topo, refine, progress);
}

SearchResult search_plans(const PlannerInputs& in, const Topology& topo, const Refiner& refine,
                          const Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult res;
  Candidates cands = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
  res.considered = cands.considered;
  res.rejected_by_rule = std::move(cands.rejected_by_rule);
  res.rejected_by_reason = std::move(cands.rejected_by_reason);
  res.evaluated = static_cast<int64_t>(cands.admitted.size());
  res.rejected = std::move(cands.rejected);

  std::vector<RankedPlan> all = predict_all(in, topo, cands.admitted, progress);
  for (RankedPlan& r : all) {
    // A non-finite time is a cost-model bug; ranking it would silently put it first or last.
    if (!std::isfinite(r.time_s)) {
      throw std::logic_error("cost model gave a non-finite iteration time for tp=" +
                             std::to_string(r.plan.tp) + " pp=" + std::to_string(r.plan.pp) +
                             " dp=" + std::to_string(r.plan.dp));
    }
    if (r.prediction.fits) {
      res.plans.push_back(std::move(r));
      continue;
    }
    ++res.rejected_by_rule[kMemoryRule];
    ++res.rejected_by_reason[to_string(RejectReason::memory)];
    const double over = r.prediction.peak_bytes + r.prediction.reserve_bytes;
    if (!res.closest || over < res.closest->prediction.peak_bytes + res.closest->prediction.reserve_bytes) {
      res.closest = r;
    }
    if (in.options.record_candidates) res.unfit.push_back(std::move(r));
  }
  if (res.closest && !in.options.record_candidates) {
    res.closest->prediction = predict(in.model, topo, in.job, res.closest->plan, in.profile);
    res.closest->time_s = res.closest->prediction.iteration_time_s;
  }
  std::sort(res.plans.begin(), res.plans.end(), ranks_before);
  if (refine) {
    const size_t k = std::min(res.plans.size(), static_cast<size_t>(std::max<int64_t>(0, in.top_k)));
    for (size_t i = 0; i < k; ++i) {
      res.plans[i].time_s = refine(res.plans[i].plan, res.plans[i].prediction);
      res.plans[i].refined = true;
    }
    std::sort(res.plans.begin(), res.plans.begin() + static_cast<std::ptrdiff_t>(k), ranks_before);
  }
  res.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

std::string explain_difference(const RankedPlan& a, const RankedPlan& b) {
  char buf[256];
  std::string out;
  std::snprintf(buf, sizeof buf, "%.3f s vs %.3f s per iteration (%.1f%% faster):", a.time_s,
                b.time_s, (b.time_s - a.time_s) / b.time_s * 100);
  out += buf;
  const TimeBreakdown& x = a.prediction.time;
  const TimeBreakdown& y = b.prediction.time;
  for (const TimePartInfo& part : kTimeParts) {
    const double d = x.*part.seconds - y.*part.seconds;
    if (std::fabs(d) < 1e-3 * b.time_s) continue;
    std::snprintf(buf, sizeof buf, " %s %+.3f s;", part.name, d);
    out += buf;
  }
  const PlanSpec& p = a.plan;
  const PlanSpec& q = b.plan;
  std::string fields;
  auto diff = [&](const char* name, const std::string& u, const std::string& v) {
    if (u != v) fields += std::string(" ") + name + " " + u + " vs " + v + ";";
  };
  diff("tp", std::to_string(p.tp), std::to_string(q.tp));
  diff("pp", std::to_string(p.pp), std::to_string(q.pp));
  diff("dp", std::to_string(p.dp), std::to_string(q.dp));
  diff("ep", std::to_string(p.ep), std::to_string(q.ep));
  diff("etp", std::to_string(expert_tp(p)), std::to_string(expert_tp(q)));
  diff("dispatcher", to_string(p.moe_dispatcher), to_string(q.moe_dispatcher));
  diff("vpp", std::to_string(p.vpp), std::to_string(q.vpp));
  diff("micro-batch", std::to_string(p.micro_batch), std::to_string(q.micro_batch));
  diff("schedule", to_string(p.schedule), to_string(q.schedule));
  diff("recompute", to_string(p.recompute), to_string(q.recompute));
  diff("sp", p.sequence_parallel ? "on" : "off", q.sequence_parallel ? "on" : "off");
  diff("zero", std::to_string(p.zero), std::to_string(q.zero));
  if (!fields.empty()) out += " plan:" + fields;
  if (!out.empty() && out.back() == ';') out.pop_back();
  return out;
}

}  // namespace parallax
