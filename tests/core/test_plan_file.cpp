#include "core_test_util.hpp"
#include "parallax/core/plan_file.hpp"

namespace parallax::test {
namespace {

json base_plan_file() {
  return {{"parallax_plan_version", 1}, {"model", base_model()},
          {"cluster", base_cluster()},  {"gpus", 1024},
          {"job", base_job()},          {"plan", base_plan()}};
}

}  // namespace

TEST_CASE("plan file: num_micro_batches is derived when absent", "[core][planfile]") {
  const PlanFile f = read_plan_file(base_plan_file(), "plan.json");
  CHECK(f.plan.num_micro_batches == 96);
  CHECK(f.gpus == 1024);
  CHECK(f.cluster.gpu.name == "a100-80gb");
}

TEST_CASE("plan file: write then read round trips", "[core][planfile][roundtrip]") {
  PlanFile f = read_plan_file(base_plan_file(), "plan.json");
  f.plan.sequence_parallel = true;
  f.plan.recompute = Recompute::selective;
  f.plan.zero = 1;
  f.job.tokens = 300e9;
  const json out = to_json(f);
  CHECK(out["parallax_plan_version"] == 1);
  CHECK(out["cluster"]["gpu"].is_object());
  const PlanFile back = read_plan_file(parse_json_text(out.dump(2), "plan.json"), "plan.json");
  CHECK(to_json(back) == out);
  CHECK(back.plan.num_micro_batches == 96);
  CHECK(back.plan.sequence_parallel);
  CHECK(back.job.tokens == 300e9);
}

TEST_CASE("plan file: version", "[core][planfile]") {
  json j = base_plan_file();
  j["parallax_plan_version"] = 2;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.parallax_plan_version",
                      {"plan.json", "must be 1 (got 2"});
  j.erase("parallax_plan_version");
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.parallax_plan_version",
                      {"is required"});
}

TEST_CASE("plan file: strict at every level", "[core][planfile]") {
  json j = base_plan_file();
  j["extra"] = 1;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.extra",
                      {"unknown key \"extra\""});
  j = base_plan_file();
  j["model"]["layers"] = -3;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.model.layers",
                      {"must be an integer >= 1 (got -3)"});
  j = base_plan_file();
  j["cluster"]["gpu"]["hbm_bytes"] = "80GB";
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.cluster.gpu.hbm_bytes",
                      {"must be a number (got string)"});
  j = base_plan_file();
  j["gpus"] = 2.5;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.gpus",
                      {"must be an integer (got 2.5)"});
}

TEST_CASE("plan file: the plan is validated", "[core][planfile]") {
  json j = base_plan_file();
  j["plan"]["tp"] = 5;
  j["gpus"] = 640;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.plan.tp",
                      {"plan.json: $.plan.tp: heads (96) must be divisible by tp (5)"});
  j = base_plan_file();
  j["plan"]["micro_batch"] = 5;
  require_input_error([&] { read_plan_file(j, "plan.json"); }, "$.plan.micro_batch",
                      {"must be divisible by micro_batch (5) * dp (16)"});
}

}  // namespace parallax::test
