// The plan's field table (plan_fields.hpp) against the plan it describes: every field reads and
// writes its own member, under its own key, with its own rule.
#include <set>
#include <string>

#include "core_test_util.hpp"
#include "parallax/core/plan_fields.hpp"

namespace parallax::test {

TEST_CASE("plan fields: keys, flags and Megatron-LM flags are each named once, of a type their writers take",
          "[core][plan]") {
  std::set<std::string> keys, flags, megatron;
  for (const PlanField& f : plan_fields()) {
    CHECK(keys.insert(f.key).second);
    REQUIRE(f.flag != nullptr);
    if (!f.derived) CHECK(flags.insert(f.flag).second);
    if (f.megatron_flag != nullptr) CHECK(megatron.insert(f.megatron_flag).second);
    // The exporters write a one-to-one flag's integer or switch, a DeepSpeed key's integer.
    if (f.megatron_flag != nullptr) CHECK(f.type != FieldType::name);
    if (f.deepspeed_key != nullptr) CHECK(f.type == FieldType::integer);
    CHECK(plan_field(f.key) == &f);
  }
  CHECK(plan_field("no_such_field") == nullptr);
  CHECK(plan_field_of_megatron_flag("--tensor-model-parallel-size") == plan_field("tp"));
  CHECK(plan_field_of_megatron_flag("--num-layers") == nullptr);
}

TEST_CASE("plan fields: a plan with every field off its default reads back equal", "[core][plan]") {
  PlanSpec p;
  p.tp = 2;
  p.cp = 3;
  p.pp = 5;
  p.dp = 7;
  p.ep = 11;
  p.etp = 13;
  p.moe_dispatcher = MoeDispatcher::hybridep;
  p.vpp = 17;
  p.microbatch_group = 19;
  p.micro_batch = 23;
  p.num_micro_batches = 29;
  p.sequence_parallel = true;
  p.recompute = Recompute::selective;
  p.recompute_layers = 31;
  p.zero = 3;
  p.first_stage_layers = 37;
  p.last_stage_layers = 41;
  p.embedding_in_split = true;
  p.loss_in_split = true;
  p.schedule = Schedule::gpipe;
  p.order = "dp-tp-cp-pp";
  const json j = to_json(p);
  CHECK(j.size() == plan_fields().size());  // every field written
  CHECK(read_as(j, read_plan) == p);
  CHECK(j.at("account_for_loss_in_pipeline_split") == true);
  CHECK(j.at("moe_dispatcher") == "hybridep");
  CHECK(j.at("micro_batch") == 23);
}

TEST_CASE("plan fields: a field at what its absence reads as is left out where the table says",
          "[core][plan]") {
  const PlanSpec p = read_as(base_plan(), read_plan);
  const json j = to_json(p);
  for (const PlanField& f : plan_fields()) {
    INFO(f.key);
    CHECK(j.contains(f.key) == f.always_written);
  }
  CHECK(read_as(j, read_plan) == p);
}

TEST_CASE("plan fields: each integer field is read with its own rule", "[core][plan]") {
  for (const PlanField& f : plan_fields()) {
    if (f.type != FieldType::integer) continue;
    INFO(f.key);
    json j = base_plan();
    j[f.key] = f.max + 1;
    require_input_error([&] { read_as(j, read_plan); }, std::string("$.") + f.key,
                        {"<= " + std::to_string(f.max)});
    j[f.key] = f.min - 1;
    require_input_error([&] { read_as(j, read_plan); }, std::string("$.") + f.key,
                        {">= " + std::to_string(f.min)});
  }
}

}  // namespace parallax::test
