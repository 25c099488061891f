// The planner's full default search (issue 5): 530B on 4480 A100s, every admitted plan predicted,
// the top 32 re-timed by the event simulator. Reports plans evaluated per second; for scale,
// Calculon evaluates about 300 plans per second on this kind of machine.
#include <benchmark/benchmark.h>

#include "parallax/core/presets.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/planner/simulator_refiner.hpp"

namespace {

void BM_PlanMtNlg4480(benchmark::State& state) {
  parallax::PlannerInputs in;
  in.model = parallax::load_model("mt-nlg-530b");
  in.cluster = parallax::load_cluster("dgx-a100-superpod");
  in.job.global_batch = 1920;
  in.gpus = 4480;
  in.profile = parallax::load_profile(in.cluster.profile);
  in.top_k = 32;
  int64_t evaluated = 0;
  for (auto _ : state) {
    // The topology is part of the search: built and analysed inside the timed loop.
    const parallax::Topology topo(in.cluster);
    const parallax::SearchResult res =
        parallax::search_plans(in, topo, parallax::simulator_refiner(in, topo));
    evaluated += res.evaluated;
    benchmark::DoNotOptimize(res.plans.data());
  }
  state.counters["plans_evaluated"] =
      benchmark::Counter(static_cast<double>(evaluated) / static_cast<double>(state.iterations()));
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanMtNlg4480)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
