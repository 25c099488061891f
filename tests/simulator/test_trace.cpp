// A trace of a small plan parses as JSON and has the metadata and one event per scheduled step
// (plus its TP part), per transfer (on the sender's and the receiver's stream), per DP bucket and
// per optimizer step; counts derived from the plan, not from the trace writer.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "parallax/simulator/trace.hpp"
#include "sim_test_util.hpp"

namespace parallax::test {

TEST_CASE("simulator: Chrome trace of a small plan", "[simulator][trace]") {
  // gpt3-175b, tp 8, pp 4, vpp 2, m 4: 4 ranks x 2 chunks x 4 micro-batches x (F + B).
  RealPlan rp = gpt3_plan(Schedule::interleaved, 4, 2, 4);
  rp.plan.dp = 2;
  rp.job.global_batch = 8;
  const SimResult r = simulate(make_sim_inputs(rp.model, rp.cluster, rp.job, rp.plan, rp.profile));
  const nlohmann::json doc = nlohmann::json::parse(chrome_trace_json(r));
  REQUIRE(doc.contains("traceEvents"));
  std::map<std::string, int> by_kind;  // ph "X" events by stream
  std::map<std::string, int> meta;
  int counters = 0, with_args = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M") ++meta[e.at("name").get<std::string>()];
    if (ph == "C") ++counters;
    if (ph == "X") {
      ++by_kind[e.at("cat").get<std::string>()];
      CHECK(e.at("dur").get<double>() >= 0);
      CHECK(e.at("pid").get<int>() < 4);
      if (e.at("args").contains("micro_batch") && e.at("args").contains("chunk")) ++with_args;
    }
  }
  const int ranks = 4, stages = 8, m = 4, steps = 2 * stages * m;  // 64 F/B steps
  const int transfers = 2 * (stages - 1) * m;                      // 56, each way per boundary
  CHECK(meta["process_name"] == ranks);
  CHECK(meta["thread_name"] == ranks * 7);  // compute, tp, pp send, pp recv, dp, cp ring, ep all-to-all
  CHECK(by_kind["pp send"] == transfers);
  CHECK(by_kind["pp recv"] == transfers);
  CHECK(by_kind["tp comm"] == steps);  // every step has exposed TP time here (tp 8, no overlap)
  // Compute: every step plus one optimizer step per rank.
  CHECK(by_kind["compute"] == steps + ranks);
  CHECK(with_args == steps * 2 + transfers * 2);
  CHECK(by_kind["dp comm"] > 0);
  CHECK(counters > 0);
  CHECK(r.steps == steps);
  CHECK(r.transfers == transfers);
}

TEST_CASE("simulator: text timeline draws one row per rank", "[simulator][trace]") {
  SimInputs in;
  in.table = make_schedule(Schedule::one_f_one_b, 2, 1, 2);
  for (int r = 0; r < 2; ++r) {
    RankCosts rc;
    rc.at(Pass::forward, StepStream::compute).s = 1;
    rc.at(Pass::backward, StepStream::compute).s = 2;
    in.ranks.push_back(rc);
  }
  // By hand, 1 s per column: rank 0 F0 F1 . . B0 B0 . B1 B1; rank 1 . F0 B0 B0 F1 B1 B1 . .
  // Total (m + pp - 1)(f + b) = 9 s.
  const SimResult r = simulate(in);
  REQUIRE(r.iteration_time_s == Approx(9.0));
  CHECK(text_timeline(r, 9) ==
        "rank 0  |FF..BB.BB|\n"
        "rank 1  |.FBBFBB..|\n");
}

}  // namespace parallax::test
