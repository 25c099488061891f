// Schedule tables against tables derived by hand from Megatron-LM's schedules.py (warm-up
// pp - r - 1 forwards for 1F1B; (pp - r - 1) * 2 + (vpp - 1) * N for interleaved, chunks in
// groups of N micro-batches, N = pp by default), and check_schedule against broken tables.
#include <sstream>
#include <stdexcept>

#include "core_test_util.hpp"
#include "parallax/core/schedule.hpp"

namespace parallax::test {
namespace {

// "F3" = forward of micro-batch 3 chunk 0; "B1.1" = backward of micro-batch 1 chunk 1.
std::vector<ScheduleStep> parse_steps(const std::string& text) {
  std::vector<ScheduleStep> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    ScheduleStep s;
    s.kind = tok[0] == 'F' ? StepKind::forward : StepKind::backward;
    const size_t dot = tok.find('.');
    s.micro_batch =
        std::stoll(tok.substr(1, dot == std::string::npos ? std::string::npos : dot - 1));
    s.chunk = dot == std::string::npos ? 0 : std::stoll(tok.substr(dot + 1));
    out.push_back(s);
  }
  return out;
}

void require_table(const ScheduleTable& t, const std::vector<std::string>& expected) {
  REQUIRE(t.ranks.size() == expected.size());
  for (size_t r = 0; r < expected.size(); ++r) {
    INFO("rank " << r);
    CHECK(t.ranks[r] == parse_steps(expected[r]));
  }
  CHECK_NOTHROW(check_schedule(t));
}

}  // namespace

TEST_CASE("schedule: 1F1B pp=4 m=8 matches the hand-derived table", "[core][schedule]") {
  require_table(make_schedule(Schedule::one_f_one_b, 4, 1, 8),
                {"F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
                 "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
                 "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
                 "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"});
}

TEST_CASE("schedule: interleaved pp=2 vpp=2 m=4 matches the hand-derived table",
          "[core][schedule]") {
  // Rank 0 warms up with (2-0-1)*2 + (2-1)*2 = 4 forwards, rank 1 with 2. Virtual micro-batch k
  // runs micro-batch (k/4)*2 + k%2, forward chunk (k/2)%2, backward chunk 1 - (k/2)%2.
  require_table(
      make_schedule(Schedule::interleaved, 2, 2, 4),
      {"F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0",
       "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0"});
}

TEST_CASE("schedule: GPipe pp=3 m=3 matches the hand-derived table", "[core][schedule]") {
  require_table(make_schedule(Schedule::gpipe, 3, 1, 3),
                {"F0 F1 F2 B0 B1 B2", "F0 F1 F2 B0 B1 B2", "F0 F1 F2 B0 B1 B2"});
}

TEST_CASE("schedule: fewer micro-batches than stages and m == pp interleaved", "[core][schedule]") {
  // 1F1B with m < pp: warm-up is capped at m, so rank 0 runs every forward first.
  require_table(make_schedule(Schedule::one_f_one_b, 4, 1, 2),
                {"F0 F1 B0 B1", "F0 F1 B0 B1", "F0 F1 B0 B1", "F0 B0 F1 B1"});
  // Interleaved with m == pp: Megatron-LM runs every forward as warm-up.
  require_table(
      make_schedule(Schedule::interleaved, 2, 2, 2),
      {"F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0", "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0"});
}

TEST_CASE("schedule: larger tables are valid", "[core][schedule]") {
  for (int64_t pp : {1, 2, 3, 4, 8, 35}) {
    for (int64_t m : {1, 2, 7, 8, 16, 240}) {
      CHECK_NOTHROW(check_schedule(make_schedule(Schedule::one_f_one_b, pp, 1, m)));
      CHECK_NOTHROW(check_schedule(make_schedule(Schedule::gpipe, pp, 1, m)));
    }
  }
  for (int64_t pp : {2, 4, 8}) {
    for (int64_t vpp : {2, 3, 4}) {
      for (int64_t groups : {1, 2, 3, 8}) {
        CHECK_NOTHROW(check_schedule(make_schedule(Schedule::interleaved, pp, vpp, pp * groups)));
      }
    }
  }
}

TEST_CASE("schedule: micro-batch groups follow Megatron-Core's schedule table", "[core][schedule]") {
  // megatron/core/model_parallel_config.py, microbatch_group_size_per_vp_stage's docstring and
  // schedules.py's get_schedule_table comment: PP 2, VP 2, N 3, M 5 runs the virtual micro-batches
  //   microbatch_id  | 0 1 2 0 1 2 3 4 3 4
  //   model_chunk_id | 0 0 0 1 1 1 0 0 1 1
  const ScheduleTable t = make_schedule(Schedule::interleaved, 2, 2, 5, 3);
  CHECK(t.microbatch_group == 3);
  CHECK_NOTHROW(check_schedule(t));
  const std::vector<int64_t> mb = {0, 1, 2, 0, 1, 2, 3, 4, 3, 4}, chunk = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  for (size_t r = 0; r < 2; ++r) {
    std::vector<int64_t> fwd_mb, fwd_chunk, bwd_mb, bwd_chunk;
    size_t warmup = 0;
    for (const ScheduleStep& s : t.ranks[r]) {
      if (s.kind == StepKind::forward) {
        fwd_mb.push_back(s.micro_batch);
        fwd_chunk.push_back(s.chunk);
        if (bwd_mb.empty()) ++warmup;
      } else {
        bwd_mb.push_back(s.micro_batch);
        bwd_chunk.push_back(s.chunk);
      }
    }
    INFO("rank " << r);
    CHECK(fwd_mb == mb);
    CHECK(fwd_chunk == chunk);
    // Backward walks the same table, chunk vpp - 1 - chunk (get_model_chunk_id, forward=False).
    CHECK(bwd_mb == mb);
    for (size_t k = 0; k < chunk.size(); ++k) CHECK(bwd_chunk[k] == 1 - chunk[k]);
    // get_pp_rank_microbatches: warm-up (pp - r - 1) * 2 + (vpp - 1) * N, then one more forward
    // before the first backward.
    CHECK(warmup == (2 - r - 1) * 2 + (2 - 1) * 3 + 1);
  }
}

TEST_CASE("schedule: groups of pp are the default, and every admitted group runs", "[core][schedule]") {
  for (int64_t pp : {2, 3, 4}) {
    for (int64_t vpp : {2, 3}) {
      for (int64_t m = 1; m <= 13; ++m) {
        if (m % pp == 0) {
          const ScheduleTable def = make_schedule(Schedule::interleaved, pp, vpp, m);
          CHECK(make_schedule(Schedule::interleaved, pp, vpp, m, pp).ranks == def.ranks);
        }
        for (int64_t n = 1; n <= m + 1; ++n) {
          INFO("pp " << pp << " vpp " << vpp << " m " << m << " group " << n);
          // Megatron-Core's rule, restated: pp <= N <= M, and M % N zero or at least pp.
          const bool runs = n >= pp && n <= m && (m % n == 0 || m % n >= pp);
          CHECK(microbatch_group_refusal(pp, m, n).empty() == runs);
          if (runs) CHECK_NOTHROW(check_schedule(make_schedule(Schedule::interleaved, pp, vpp, m, n)));
        }
      }
    }
  }
  CHECK(smallest_microbatch_group(2, 5) == 3);  // 5 % 2 = 1 < 2; 5 % 3 = 2
  CHECK(smallest_microbatch_group(4, 6) == 6);  // 6 % 4 = 2, 6 % 5 = 1: only one group of 6
  CHECK(smallest_microbatch_group(4, 8) == 4);
  CHECK(smallest_microbatch_group(4, 11) == 6);  // 11 % 4 = 3, 11 % 5 = 1, 11 % 6 = 5 >= 4
  CHECK(smallest_microbatch_group(4, 3) == 0);   // fewer micro-batches than stages
}

TEST_CASE("schedule: format_schedule prints one line per rank", "[core][schedule]") {
  CHECK(format_schedule(make_schedule(Schedule::one_f_one_b, 2, 1, 2)) ==
        "rank 0: F0 F1 B0 B1\nrank 1: F0 B0 F1 B1\n");
  CHECK(format_schedule(make_schedule(Schedule::interleaved, 2, 2, 2)) ==
        "rank 0: F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0\n"
        "rank 1: F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0\n");
}

TEST_CASE("schedule: unrunnable combinations are input errors", "[core][schedule]") {
  require_input_error([] { make_schedule(Schedule::interleaved, 4, 2, 6); },
                      "$.plan.num_micro_batches", {"schedule", "multiple of pp (4)", "microbatch_group"});
  require_input_error([] { make_schedule(Schedule::interleaved, 4, 2, 6, 5); }, "$.plan.microbatch_group",
                      {"(6) % microbatch_group (5) = 1", "smaller than pp (4)"});
  require_input_error([] { make_schedule(Schedule::interleaved, 4, 2, 6, 3); }, "$.plan.microbatch_group",
                      {"[pp, num_micro_batches] = [4, 6]"});
  require_input_error([] { make_schedule(Schedule::one_f_one_b, 4, 1, 8, 4); }, "$.plan.microbatch_group",
                      {"needs schedule \"interleaved\""});
  require_input_error([] { make_schedule(Schedule::one_f_one_b, 4, 2, 8); }, "$.plan.vpp",
                      {"requires schedule \"interleaved\""});
  require_input_error([] { make_schedule(Schedule::interleaved, 4, 1, 8); }, "$.plan.vpp",
                      {"requires vpp > 1"});
  require_input_error([] { make_schedule(Schedule::gpipe, 0, 1, 8); }, "$.plan.pp", {">= 1"});
  require_input_error([] { make_schedule(Schedule::gpipe, 2, 1, 0); }, "$.plan.num_micro_batches",
                      {">= 1"});
}

TEST_CASE("schedule: check_schedule rejects broken tables", "[core][schedule]") {
  ScheduleTable t = make_schedule(Schedule::one_f_one_b, 2, 1, 2);
  SECTION("backward before its forward") {
    t.ranks[1] = parse_steps("B0 F0 F1 B1");
    CHECK_THROWS_WITH(check_schedule(t), Catch::Contains("before its forward"));
  }
  SECTION("a step twice") {
    t.ranks[0] = parse_steps("F0 F0 B0 B1");
    CHECK_THROWS_WITH(check_schedule(t), Catch::Contains("twice"));
  }
  SECTION("a missing step") {
    t.ranks[0] = parse_steps("F0 F1 B0");
    CHECK_THROWS_WITH(check_schedule(t), Catch::Contains("steps, expected 4"));
  }
  SECTION("cross-rank deadlock") {
    // Rank 0 waits for B0 from rank 1 before sending F1; rank 1 insists on F1 before B0.
    t.ranks[0] = parse_steps("F0 B0 F1 B1");
    t.ranks[1] = parse_steps("F0 F1 B0 B1");
    CHECK_THROWS_WITH(check_schedule(t), Catch::Contains("deadlock"));
  }
}

}  // namespace parallax::test
