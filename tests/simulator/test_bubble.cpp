// With equal stage times and no communication the simulated bubble must equal the closed forms:
// (pp-1)/m for GPipe and 1F1B, (pp-1)/(m*vpp) for interleaved 1F1B (Narayanan et al. 2021, §2.2).
#include <catch2/catch.hpp>

#include "parallax/simulator/simulate.hpp"

namespace parallax::test {
namespace {

// Every rank: per chunk forward f/vpp, backward b/vpp; no TP, p2p, DP or optimizer time.
SimInputs equal_stages(Schedule s, int64_t pp, int64_t vpp, int64_t m, double f, double b,
                       int64_t group = 0) {
  SimInputs in;
  in.table = make_schedule(s, pp, vpp, m, group);
  for (int64_t r = 0; r < pp; ++r) {
    RankCosts rc;
    rc.at(Pass::forward, StepStream::compute).s = f / static_cast<double>(vpp);
    rc.at(Pass::backward, StepStream::compute).s = b / static_cast<double>(vpp);
    in.ranks.push_back(rc);
  }
  return in;
}

void require_bubble(Schedule s, int64_t pp, int64_t vpp, int64_t m, double f, double b,
                    int64_t group = 0) {
  INFO(to_string(s) << " pp=" << pp << " vpp=" << vpp << " m=" << m << " f=" << f << " b=" << b
                    << " group=" << group);
  const SimResult r = simulate(equal_stages(s, pp, vpp, m, f, b, group));
  const double expected = static_cast<double>(pp - 1) / static_cast<double>(m * vpp);
  const double mm = static_cast<double>(m);
  // Total: m steady micro-batches plus the bubble, (m + (pp-1)/vpp) (f + b).
  CHECK(r.iteration_time_s ==
        Approx((mm + static_cast<double>(pp - 1) / static_cast<double>(vpp)) * (f + b))
            .epsilon(1e-12));
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    INFO("rank " << k);
    CHECK(r.ranks[k].steps_s == Approx(mm * (f + b)).epsilon(1e-12));
    CHECK(r.ranks[k].bubble_ratio == Approx(expected).epsilon(1e-12));
    CHECK(r.ranks[k].bubble_fraction ==
          Approx(static_cast<double>(pp - 1) /
                 (mm * static_cast<double>(vpp) + static_cast<double>(pp - 1)))
              .epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("simulator: 1F1B bubble is (pp-1)/m with equal stages", "[simulator][bubble]") {
  require_bubble(Schedule::one_f_one_b, 4, 1, 8, 1.0, 2.0);
  require_bubble(Schedule::one_f_one_b, 8, 1, 64, 0.3, 0.9);
  require_bubble(Schedule::one_f_one_b, 35, 1, 240, 0.0567, 0.1134);
  require_bubble(Schedule::one_f_one_b, 2, 1, 1, 1.0, 1.0);
  require_bubble(Schedule::one_f_one_b, 1, 1, 5, 1.0, 3.0);
}

TEST_CASE("simulator: GPipe bubble is (pp-1)/m with equal stages", "[simulator][bubble]") {
  require_bubble(Schedule::gpipe, 3, 1, 3, 1.0, 2.0);
  require_bubble(Schedule::gpipe, 8, 1, 32, 0.5, 1.0);
}

TEST_CASE("simulator: interleaved bubble is (pp-1)/(m vpp) with equal stages",
          "[simulator][bubble]") {
  require_bubble(Schedule::interleaved, 2, 2, 4, 1.0, 2.0);
  require_bubble(Schedule::interleaved, 4, 2, 8, 1.0, 2.0);
  require_bubble(Schedule::interleaved, 4, 4, 16, 1.0, 2.0);
  require_bubble(Schedule::interleaved, 8, 3, 64, 0.2, 0.6);
}

TEST_CASE("simulator: micro-batch groups keep the interleaved bubble at (pp-1)/(m vpp)",
          "[simulator][bubble]") {
  // Megatron-Core's groups exist to run m not divisible by pp without a larger bubble: a group of
  // N >= pp whose last group is empty or at least pp never waits on itself
  // (schedules.py, forward_backward_pipelining_with_interleaving).
  require_bubble(Schedule::interleaved, 2, 2, 5, 1.0, 2.0, 3);
  require_bubble(Schedule::interleaved, 4, 2, 10, 1.0, 2.0, 5);
  require_bubble(Schedule::interleaved, 4, 2, 11, 1.0, 2.0, 6);
  require_bubble(Schedule::interleaved, 4, 3, 6, 0.5, 1.0, 6);
  require_bubble(Schedule::interleaved, 4, 2, 12, 1.0, 2.0, 12);
}

TEST_CASE("simulator: p2p transfers on the critical path", "[simulator]") {
  // 1F1B, pp = 2, m = 6, f = 1, b = 2, transfer c = 0.1, derived by hand.
  SimInputs in = equal_stages(Schedule::one_f_one_b, 2, 1, 6, 1.0, 2.0);
  in.p2p_s = 0.1;
  SECTION("sends overlap compute: rank 0's backwards end at 2f+2b+2c, 3f+3b+2c, 4f+4b+4c, ...") {
    in.p2p_exposed_fraction = 0;
    // ... alternating, B5 ends at 7(f + b) + 6c.
    CHECK(simulate(in).iteration_time_s == Approx(7 * 3.0 + 6 * 0.1).epsilon(1e-12));
  }
  SECTION("blocking sends (Megatron-LM): each of rank 0's steady steps waits for its send") {
    in.p2p_exposed_fraction = 1;
    // Rank 0 sends F0..F5 (6c of its own time), rank 1 sends B0..B5; rank 0's B(i) waits for
    // rank 1's B(i) and its send. By hand: rank 0 F0 [0,1] send ->1.1, F1 [1.1,2.1] ->2.2;
    // rank 1 F0 [1.1,2.1], B0 [2.1,4.1] send ->4.2, F1 [4.2,5.2], B1 [5.2,7.2] ->7.3;
    // rank 0 B0 [4.2,6.2], F2 [6.2,7.2] ->7.3, B1 [7.3,9.3], F3 [9.3,10.3] ->10.4;
    // rank 1 F2 [7.3,8.3], B2 [8.3,10.3] ->10.4; rank 0 B2 [10.4,12.4]: from B1 on each cycle
    // takes f + b + c = 3.1, so B5 ends at 9.3 + 4 * 3.1 = 21.7 = 7 (f + b) + 7c.
    const SimResult r = simulate(in);
    CHECK(r.iteration_time_s == Approx(21.7).epsilon(1e-12));
    CHECK(r.ranks[0].send_wait_s == Approx(6 * 0.1).epsilon(1e-12));
    CHECK(r.ranks[1].send_wait_s == Approx(6 * 0.1).epsilon(1e-12));
  }
  CHECK(simulate(in).transfers == 2 * 6);
}

TEST_CASE("simulator: DeepSpeed's blocking receives add two transfers per micro-batch", "[simulator]") {
  // 1F1B on pp 3, f = 1, b = 2, c = 0.1, sends blocking. In the steady state the middle rank runs
  // a forward and a backward per micro-batch and waits for its two sends: each more micro-batch
  // costs f + b + 2c. When its two receives block it as well (DeepSpeed's paired, blocking
  // transfers), it waits for four: f + b + 4c.
  auto slope = [](bool receive_blocks) {
    auto time = [&](int64_t m) {
      SimInputs in = equal_stages(Schedule::one_f_one_b, 3, 1, m, 1.0, 2.0);
      in.p2p_s = 0.1;
      in.p2p_exposed_fraction = 1;
      in.p2p_receive_blocks = receive_blocks;
      return simulate(in).iteration_time_s;
    };
    return time(41) - time(40);
  };
  CHECK(slope(false) == Approx(1 + 2 + 2 * 0.1).epsilon(1e-9));
  CHECK(slope(true) == Approx(1 + 2 + 4 * 0.1).epsilon(1e-9));
}

}  // namespace parallax::test
