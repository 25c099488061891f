// The planner's full default search (issue 5): 530B on 4480 A100s, every admitted plan predicted,
// the top 32 re-timed by the event simulator. Reports plans evaluated per second; for scale,
// Calculon evaluates about 300 plans per second on this kind of machine. Then the frontier
// searches (issue 59) on 16,384 H100s, read against it.
#include <benchmark/benchmark.h>

#include <string>

#include "parallax/core/presets.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/planner/simulator_refiner.hpp"

namespace {

// Every admitted plan predicted, the top 32 simulated; the topology is part of the search: built
// and analysed inside the timed loop.
void run_search(benchmark::State& state, const parallax::PlannerInputs& in) {
  int64_t evaluated = 0;
  for (auto _ : state) {
    const parallax::Topology topo(in.cluster);
    const parallax::SearchResult res =
        parallax::search_plans(in, topo, parallax::simulator_refiner(in));
    evaluated += res.evaluated;
    benchmark::DoNotOptimize(res.plans.data());
  }
  state.counters["plans_evaluated"] =
      benchmark::Counter(static_cast<double>(evaluated) / static_cast<double>(state.iterations()));
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsRate);
}

void BM_PlanMtNlg4480(benchmark::State& state) {
  parallax::PlannerInputs in;
  in.model = parallax::load_model("mt-nlg-530b");
  in.cluster = parallax::load_cluster("dgx-a100-superpod");
  in.job.global_batch = 1920;
  in.gpus = 4480;
  in.profile = parallax::load_profile(in.cluster.profile);
  in.top_k = 32;
  run_search(state, in);
}
BENCHMARK(BM_PlanMtNlg4480)->Unit(benchmark::kMillisecond)->UseRealTime();

// The frontier searches of issue 59, as `parallax plan` resolves them (presets, the stack, the
// cluster at 2048 nodes): every admitted plan predicted and the top 32 simulated. Their times are
// read as ratios to BM_PlanMtNlg4480 of the same run (bench/planner_ratios.sh).
parallax::PlannerInputs frontier_inputs(const std::string& model, const std::string& seq_len,
                                        const std::string& global_batch, const std::string& dtype) {
  parallax::PlanOptions o;
  o.model = model;
  o.seq_len = seq_len;
  o.cluster = "dgx-h100-superpod";
  o.nodes = "2048";
  o.gpus = "16384";
  o.job_value("global_batch") = global_batch;
  o.job_value("framework") = "megatron-core";
  o.job_value("dtype") = dtype;
  return parallax::planner_inputs(parallax::resolve_job(o), parallax::SearchFlags{});
}

// DeepSeek-V3-class MoE (61 layers, 256 experts, top-8), fp8, sequence 4096, batch 8192.
void BM_PlanDeepSeekV3_16384(benchmark::State& state) {
  run_search(state, frontier_inputs("deepseek-v3-shaped", "4096", "8192", "fp8"));
}
BENCHMARK(BM_PlanDeepSeekV3_16384)->Unit(benchmark::kMillisecond)->UseRealTime();

// Llama 3.1 405B at 128K context, bf16, batch 1920 sequences.
void BM_PlanLlama405B_128K_16384(benchmark::State& state) {
  run_search(state, frontier_inputs("llama3.1-405b", "131072", "1920", "bf16"));
}
BENCHMARK(BM_PlanLlama405B_128K_16384)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
