// Cost of collective queries on the cluster graph. The planner asks millions of them, so after
// the first analysis of a plan (or a group) a query must be a hash lookup plus a closed form
// (target < 1 us). Run: build/bench/bench_collectives
#include <benchmark/benchmark.h>

#include <optional>
#include <vector>

#include "parallax/core/presets.hpp"
#include "parallax/topologies/topology.hpp"

namespace {

using namespace parallax;

PlanSpec mtnlg_plan() {
  PlanSpec p;  // MT-NLG 530B on 2240 GPUs: tp 8, pp 35, dp 8
  p.tp = 8;
  p.pp = 35;
  p.dp = 8;
  return p;
}

void BM_TopologyBuild(benchmark::State& state) {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  for (auto _ : state) {
    Topology t(c);
    benchmark::DoNotOptimize(t.graph().link_count());
  }
}
BENCHMARK(BM_TopologyBuild)->Unit(benchmark::kMillisecond);

// First question about a plan: placement, routing of every group, link sharing.
void BM_PlanAnalysisCold(benchmark::State& state) {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  PlanSpec p = mtnlg_plan();
  std::optional<Topology> t;
  int64_t variant = 0;
  const char* orders[] = {"tp-dp-pp", "dp-tp-pp", "tp-pp-dp", "pp-tp-dp", "dp-pp-tp", "pp-dp-tp"};
  for (auto _ : state) {
    state.PauseTiming();
    if (variant % 6 == 0) t.emplace(c);  // a fresh memo every 6 orders
    p.order = orders[variant++ % 6];
    state.ResumeTiming();
    benchmark::DoNotOptimize(t->plan_comm(p).tp_by_stage.size());
  }
}
BENCHMARK(BM_PlanAnalysisCold)->Unit(benchmark::kMillisecond);

// Warm: the planner's query, TP all-reduce time of a stage's groups for a message size.
void BM_PlanCollectiveQuery(benchmark::State& state) {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const PlanSpec p = mtnlg_plan();
  t.plan_comm(p);  // analyse once
  double bytes = 1e6;
  int64_t stage = 0;
  for (auto _ : state) {
    const PlanComm& pc = t.plan_comm(p);
    benchmark::DoNotOptimize(max_collective_time_s(pc.dp_by_stage[static_cast<size_t>(stage)],
                                                   Collective::all_reduce, bytes));
    bytes = bytes < 1e10 ? bytes * 1.1 : 1e6;
    stage = (stage + 1) % p.pp;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanCollectiveQuery);

// Warm: a concrete 64-GPU group (hash of its GPU list) and one collective.
void BM_GroupQuery(benchmark::State& state) {
  const Topology t(load_cluster("dgx-a100-superpod"));
  std::vector<int64_t> gpus;
  for (int64_t i = 0; i < 64; ++i) gpus.push_back(i);
  t.group_cost(gpus);
  double bytes = 1e6;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time_s(t.group_cost(gpus), Collective::all_reduce, bytes));
    bytes = bytes < 1e10 ? bytes * 1.1 : 1e6;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GroupQuery);

// The closed form alone, on an analysed group.
void BM_ClosedForm(benchmark::State& state) {
  const Topology t(load_cluster("dgx-a100-superpod"));
  std::vector<int64_t> gpus;
  for (int64_t i = 0; i < 64; ++i) gpus.push_back(i);
  const GroupCost g = t.group_cost(gpus);
  double bytes = 1e6;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time_s(g, Collective::all_reduce, bytes));
    bytes = bytes < 1e10 ? bytes * 1.1 : 1e6;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClosedForm);

}  // namespace

BENCHMARK_MAIN();
