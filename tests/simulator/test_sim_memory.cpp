// The activation stash the simulator accumulates while playing the schedule must peak, on every
// stage, at what the memory model's in-flight count gives (costmodel/memory.hpp), and with the
// static memory at the memory model's stage total.
#include <catch2/catch.hpp>

#include "parallax/costmodel/memory.hpp"
#include "parallax/simulator/simulate.hpp"
#include "sim_test_util.hpp"

namespace parallax::test {
namespace {

void require_peaks(Schedule s, int64_t pp, int64_t vpp, int64_t m, int64_t group = 0) {
  const RealPlan rp = gpt3_plan(s, pp, vpp, m, group);
  const SimResult r = simulate(make_sim_inputs(rp.model, rp.cluster, rp.job, rp.plan, rp.profile));
  const std::vector<StageMemory> mem = stage_memory(rp.model, rp.job, rp.plan);
  REQUIRE(r.ranks.size() == mem.size());
  for (size_t k = 0; k < mem.size(); ++k) {
    INFO(to_string(s) << " pp=" << pp << " vpp=" << vpp << " m=" << m << " group=" << group
                      << " stage " << k);
    const double in_flight = in_flight_micro_batches(rp.plan, static_cast<int64_t>(k));
    const double per_mb =
        stage_activation_bytes_per_micro_batch(rp.model, rp.job, rp.plan, static_cast<int64_t>(k));
    CHECK(r.ranks[k].peak_activation_bytes / per_mb == Approx(in_flight).epsilon(1e-12));
    CHECK(r.ranks[k].peak_activation_bytes == Approx(mem[k].activations_bytes).epsilon(1e-12));
    CHECK(r.ranks[k].peak_bytes == Approx(mem[k].total_bytes()).epsilon(1e-12));
    // The stash is empty again at the end of the iteration.
    CHECK(r.ranks[k].memory.back().bytes ==
          Approx(mem[k].total_bytes() - mem[k].activations_bytes).epsilon(1e-9));
  }
}

}  // namespace

TEST_CASE("simulator: 1F1B peak stash per stage equals the in-flight count",
          "[simulator][memory]") {
  require_peaks(Schedule::one_f_one_b, 8, 1, 32);
  require_peaks(Schedule::one_f_one_b, 4, 1, 8);
  require_peaks(Schedule::one_f_one_b, 8, 1, 4);  // m < pp: min(pp - k, m)
}

TEST_CASE("simulator: interleaved peak stash per stage equals the in-flight count",
          "[simulator][memory]") {
  require_peaks(Schedule::interleaved, 4, 2, 8);
  require_peaks(Schedule::interleaved, 8, 3, 32);
  require_peaks(Schedule::interleaved, 4, 4, 4);  // m == pp: all forwards first
}

TEST_CASE("simulator: micro-batch groups stash (vpp - 1) * N chunks more in warm-up",
          "[simulator][memory]") {
  require_peaks(Schedule::interleaved, 4, 2, 10, 5);
  require_peaks(Schedule::interleaved, 4, 3, 12, 12);
  // By hand, stage 0 of pp 4, vpp 2, groups of 6 (m 11): warm-up (4 - 1) * 2 + (2 - 1) * 6 = 12
  // chunk forwards, one more before the first backward: 13 chunks of 1/2 the stage's layers.
  const RealPlan rp = gpt3_plan(Schedule::interleaved, 4, 2, 11, 6);
  CHECK(in_flight_micro_batches(rp.plan, 0) == Approx(13.0 / 2).epsilon(1e-12));
  require_peaks(Schedule::interleaved, 4, 2, 11, 6);
}

TEST_CASE("simulator: GPipe keeps every micro-batch", "[simulator][memory]") {
  require_peaks(Schedule::gpipe, 4, 1, 6);
}

}  // namespace parallax::test
