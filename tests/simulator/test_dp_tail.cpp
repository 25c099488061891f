// The data-parallel tail: gradient buckets after (or, by the profile's overlap, under) the last
// backward, the tied-embedding all-reduce, then the optimizer. Hand-derived on 1F1B pp = 2,
// m = 2, f = 1, b = 2 without p2p: rank 0's last backward runs [7, 9], rank 1's [5, 7].
#include <algorithm>
#include <catch2/catch.hpp>

#include "parallax/simulator/simulate.hpp"

namespace parallax::test {
namespace {

SimInputs two_ranks(double dp_s, double exposed, double embedding_s) {
  SimInputs in;
  in.table = make_schedule(Schedule::one_f_one_b, 2, 1, 2);
  for (int r = 0; r < 2; ++r) {
    RankCosts rc;
    rc.at(Pass::forward, StepStream::compute).s = 1;
    rc.at(Pass::backward, StepStream::compute).s = 2;
    rc.dp_s = dp_s;
    rc.dp_buckets = 4;
    rc.embedding_sync_s = embedding_s;
    rc.dp_hidden_s = (1 - exposed) * (dp_s + embedding_s);
    rc.optimizer_s = 0.5;
    in.ranks.push_back(rc);
  }
  return in;
}

int count(const SimResult& r, int rank, SimOpKind k) {
  int n = 0;
  for (const SimOp& op : r.ops) n += op.rank == rank && op.kind == k;
  return n;
}

}  // namespace

TEST_CASE("simulator: exposed DP reduction and optimizer follow the last backward",
          "[simulator][dp]") {
  const SimResult r = simulate(two_ranks(1.0, 1.0, 0));
  CHECK(r.pipeline_flush_s == Approx(9.0));
  CHECK(r.ranks[0].last_backward_end_s == Approx(9.0));
  CHECK(r.ranks[1].last_backward_end_s == Approx(7.0));
  CHECK(r.ranks[0].end_s == Approx(9.0 + 1.0 + 0.5));
  CHECK(r.ranks[1].end_s == Approx(7.0 + 1.0 + 0.5));
  CHECK(r.iteration_time_s == Approx(10.5));
  CHECK(count(r, 0, SimOpKind::dp_bucket) == 4);
  CHECK(count(r, 0, SimOpKind::optimizer) == 1);
  // Busy = 2 x (1 + 2) of steps + 0.5 optimizer, of 10.5.
  CHECK(r.ranks[0].busy_fraction == Approx(6.5 / 10.5));
  CHECK(r.ranks[1].idle_fraction == Approx(4.0 / 10.5));
}

TEST_CASE("simulator: the profile's DP overlap hides that share under the last backward",
          "[simulator][dp]") {
  // 75% overlapped: buckets start 0.75 s before rank 0's last backward ends, 0.25 s exposed.
  const SimResult r = simulate(two_ranks(1.0, 0.25, 0));
  CHECK(r.iteration_time_s == Approx(9.0 + 0.25 + 0.5));
  double first_bucket = 1e9;
  for (const SimOp& op : r.ops) {
    if (op.rank == 0 && op.kind == SimOpKind::dp_bucket)
      first_bucket = std::min(first_bucket, op.start_s);
  }
  CHECK(first_bucket == Approx(8.25));
  // Never before the last backward starts: 5 s of reduction, fully "overlapped", starts at 7.
  const SimResult long_dp = simulate(two_ranks(5.0, 0.0, 0));
  CHECK(long_dp.iteration_time_s == Approx(7.0 + 5.0 + 0.5));
}

TEST_CASE("simulator: the tied-embedding all-reduce follows the gradient buckets",
          "[simulator][dp]") {
  const SimResult r = simulate(two_ranks(1.0, 1.0, 0.2));
  CHECK(r.iteration_time_s == Approx(9.0 + 1.0 + 0.2 + 0.5));
  CHECK(count(r, 0, SimOpKind::embedding_sync) == 1);
  CHECK(count(r, 1, SimOpKind::embedding_sync) == 1);
}

}  // namespace parallax::test

namespace parallax::test {

TEST_CASE("simulator: simulate_into recycles a previous result without leaking its state",
          "[simulator]") {
  // A larger plan first, then the small one into the same result: the same as a fresh run.
  SimResult out = simulate(two_ranks(1.0, 1.0, 0.2));
  SimInputs big;
  big.table = make_schedule(Schedule::one_f_one_b, 4, 1, 8);
  for (int r = 0; r < 4; ++r) {
    RankCosts rc;
    rc.at(Pass::forward, StepStream::compute).s = 1;
    rc.at(Pass::backward, StepStream::compute).s = 1;
    big.ranks.push_back(rc);
  }
  simulate_into(big, {}, out);
  CHECK(out.ranks.size() == 4);
  simulate_into(two_ranks(1.0, 0.25, 0), {}, out);
  const SimResult fresh = simulate(two_ranks(1.0, 0.25, 0));
  CHECK(out.iteration_time_s == fresh.iteration_time_s);
  CHECK(out.ops.size() == fresh.ops.size());
  REQUIRE(out.ranks.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    CHECK(out.ranks[k].memory.size() == fresh.ranks[k].memory.size());
    CHECK(out.ranks[k].busy_s == fresh.ranks[k].busy_s);
    CHECK(out.ranks[k].send_wait_s == fresh.ranks[k].send_wait_s);
  }
  CHECK(out.events == fresh.events);
}

}  // namespace parallax::test
