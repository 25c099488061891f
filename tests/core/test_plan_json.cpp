#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("plan: defaults", "[core][plan]") {
  const PlanSpec p = read_as(base_plan(), read_plan);
  CHECK(p.gpus() == 1024);
  CHECK(p.vpp == 1);
  CHECK(p.num_micro_batches == 0);  // derived later from the job
  CHECK_FALSE(p.sequence_parallel);
  CHECK(p.recompute == Recompute::none);
  CHECK(p.recompute_layers == 0);
  CHECK(p.zero == 0);
  CHECK(p.schedule == Schedule::one_f_one_b);
  CHECK(p.order == "tp-dp-pp");
}

TEST_CASE("plan: schedule defaults to interleaved with vpp > 1", "[core][plan]") {
  json j = base_plan();
  j["vpp"] = 2;
  CHECK(read_as(j, read_plan).schedule == Schedule::interleaved);
  j["schedule"] = "gpipe";
  CHECK(read_as(j, read_plan).schedule ==
        Schedule::gpipe);  // explicit wins; validate_plan judges it
}

TEST_CASE("plan: field rules", "[core][plan]") {
  json j = base_plan();
  j["tp"] = 0;
  require_input_error([&] { read_as(j, read_plan, "plan.json"); }, "$.tp",
                      {"plan.json", ">= 1 (got 0)"});
  j = base_plan();
  j.erase("micro_batch");
  require_input_error([&] { read_as(j, read_plan); }, "$.micro_batch", {"is required"});
  j = base_plan();
  j["num_micro_batches"] = 0;
  require_input_error([&] { read_as(j, read_plan); }, "$.num_micro_batches", {">= 1 (got 0)"});
  j = base_plan();
  j["zero"] = 4;
  require_input_error([&] { read_as(j, read_plan); }, "$.zero", {"<= 3 (got 4)"});
  j = base_plan();
  j["recompute_layers"] = -1;
  require_input_error([&] { read_as(j, read_plan); }, "$.recompute_layers", {">= 0 (got -1)"});
  j = base_plan();
  j["sequence_parallel"] = "true";
  require_input_error([&] { read_as(j, read_plan); }, "$.sequence_parallel",
                      {"must be a boolean (got string)"});
}

TEST_CASE("plan: order must be a permutation of tp, dp, pp (and cp)", "[core][plan]") {
  for (const char* ok : {"tp-dp-pp", "tp-pp-dp", "pp-dp-tp", "tp-cp-dp-pp", "cp-tp-pp-dp"}) {
    json j = base_plan();
    j["order"] = ok;
    CHECK(read_as(j, read_plan).order == ok);
  }
  for (const char* bad : {"tp-dp", "tp-tp-pp", "tp-dp-pp-", "-tp-dp-pp", "tp-dp-pp-ep", "tp_dp_pp",
                          "", "tp--dp-pp"}) {
    INFO(bad);
    json j = base_plan();
    j["order"] = bad;
    require_input_error([&] { read_as(j, read_plan); }, "$.order",
                        {"tp, dp and pp", "joined by '-'"});
  }
}

TEST_CASE("plan: write then read round trips", "[core][plan][roundtrip]") {
  PlanSpec p;
  p.tp = 4;
  p.pp = 8;
  p.dp = 3;
  p.vpp = 3;
  p.micro_batch = 2;
  p.num_micro_batches = 64;
  p.sequence_parallel = true;
  p.recompute = Recompute::full;
  p.recompute_layers = 2;
  p.zero = 1;
  p.schedule = Schedule::interleaved;
  p.microbatch_group = 16;
  p.order = "tp-pp-dp";
  p.cp = 2;
  const json out = to_json(p);
  const PlanSpec back = read_as(parse_json_text(out.dump(), "p.json"), read_plan);
  CHECK(back.tp == p.tp);
  CHECK(back.pp == p.pp);
  CHECK(back.cp == p.cp);
  CHECK(back.dp == p.dp);
  CHECK(back.vpp == p.vpp);
  CHECK(back.microbatch_group == p.microbatch_group);
  CHECK(back.micro_batch == p.micro_batch);
  CHECK(back.num_micro_batches == p.num_micro_batches);
  CHECK(back.sequence_parallel == p.sequence_parallel);
  CHECK(back.recompute == p.recompute);
  CHECK(back.recompute_layers == p.recompute_layers);
  CHECK(back.zero == p.zero);
  CHECK(back.schedule == p.schedule);
  CHECK(back.order == p.order);
  CHECK(to_json(back) == out);

  // "Derive it" (0) survives a round trip too, and gpipe with vpp 1 stays gpipe.
  p.num_micro_batches = 0;
  p.microbatch_group = 0;  // pp, the default: left out of the file
  CHECK_FALSE(to_json(p).contains("microbatch_group"));
  p.vpp = 1;
  p.schedule = Schedule::gpipe;
  const PlanSpec back0 = read_as(to_json(p), read_plan);
  CHECK(back0.num_micro_batches == 0);
  CHECK(back0.schedule == Schedule::gpipe);
}

TEST_CASE("plan: cp is written only when above 1, and absent reads as 1", "[core][plan]") {
  PlanSpec p;
  CHECK_FALSE(to_json(p).contains("cp"));
  p.cp = 4;
  CHECK(to_json(p)["cp"] == 4);
  CHECK(p.gpus() == 4);  // tp * cp * pp * dp
  json j = to_json(PlanSpec{});
  CHECK(read_as(j, read_plan).cp == 1);
  j["cp"] = 0;
  require_input_error([&] { read_as(j, read_plan); }, "$.cp", {"must be an integer >= 1 (got 0)"});
}

}  // namespace parallax::test
