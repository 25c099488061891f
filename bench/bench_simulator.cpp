// One training iteration of the MT-NLG 530B plan (Smith et al. 2022: 2240 A100s, tp 8, pp 35,
// dp 8, micro-batch 1, global batch 1920, so m = 240 micro-batches per pipeline) played by the
// event simulator. docs/design.md §6 asks for milliseconds; events/s is printed as a counter.
#include <benchmark/benchmark.h>

#include "parallax/core/presets.hpp"
#include "parallax/simulator/simulate.hpp"

namespace {

struct MtNlg {
  parallax::ModelSpec model = parallax::load_model("mt-nlg-530b");
  parallax::ClusterSpec cluster = parallax::load_cluster("dgx-a100-superpod");
  parallax::EfficiencyProfile profile = parallax::load_profile("a100-megatron");
  parallax::JobSpec job;
  parallax::PlanSpec plan;
  MtNlg() {
    job.global_batch = 1920;
    plan.tp = 8;
    plan.pp = 35;
    plan.dp = 8;
    plan.micro_batch = 1;
    plan.num_micro_batches = 240;
    plan.recompute = parallax::Recompute::full;
  }
  parallax::SimInputs inputs() const {
    return parallax::make_sim_inputs(model, cluster, job, plan, profile);
  }
};

void run(benchmark::State& state, const parallax::SimOptions& opt) {
  const parallax::SimInputs in = MtNlg().inputs();
  int64_t events = 0;
  for (auto _ : state) {
    const parallax::SimResult r = parallax::simulate(in, opt);
    events = r.events;
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

// Everything kept: every op (for the trace) and the memory samples, in fresh buffers.
void BM_SimulateMtNlg530b(benchmark::State& state) { run(state, {true, true}); }
// Everything kept, recycling the previous result's buffers (simulate_into).
void BM_SimulateMtNlg530bReusedBuffers(benchmark::State& state) {
  const parallax::SimInputs in = MtNlg().inputs();
  parallax::SimResult r;
  for (auto _ : state) {
    parallax::simulate_into(in, {true, true}, r);
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
}
// What the planner needs: times, fractions and peaks only.
void BM_SimulateMtNlg530bNoRecording(benchmark::State& state) { run(state, {false, false}); }
// Including the schedule table and the cost model's iteration costs.
void BM_SimulateMtNlg530bWithSetup(benchmark::State& state) {
  const MtNlg p;
  int64_t events = 0;
  for (auto _ : state) {
    const parallax::SimResult r = parallax::simulate(p.inputs(), {false, false});
    events = r.events;
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_SimulateMtNlg530b)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateMtNlg530bReusedBuffers)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateMtNlg530bNoRecording)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateMtNlg530bWithSetup)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
