// Each stack's capability table (presets/stacks/, "capabilities"): what the presets say, read as
// written, and bad tables named by their field.
#include <catch2/catch.hpp>

#include <algorithm>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"

using namespace parallax;

namespace {

template <class T>
bool has(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST_CASE("stack capabilities: Megatron-LM shards optimizer state only, Megatron-Core also runs FSDP") {
  const StackCapabilities lm = load_stack("megatron-lm").capabilities;
  CHECK(lm.zero_stages == std::vector<int64_t>{0, 1});
  CHECK(lm.exporter == Exporter::megatron);
  CHECK_FALSE(has(lm.schedules, Schedule::gpipe));
  CHECK_FALSE(has(lm.positions, Position::alibi));
  const StackCapabilities core = load_stack("megatron-core").capabilities;
  CHECK(core.zero_stages == std::vector<int64_t>{0, 1, 2, 3});  // --use-megatron-fsdp
  CHECK(core.exporter == Exporter::megatron);
  // DeepSpeed's pipeline engine: 1F1B only; its launch is a DeepSpeed config.
  const StackCapabilities ds = load_stack("megatron-deepspeed").capabilities;
  CHECK(ds.schedules == std::vector<Schedule>{Schedule::one_f_one_b});
  // microsoft/Megatron-DeepSpeed has no ALiBi argument (BLOOM's was BigScience's fork).
  CHECK_FALSE(has(ds.positions, Position::alibi));
  CHECK(ds.exporter == Exporter::deepspeed);
  // FSDP alone: no tensor or pipeline parallelism, no ZeRO-1.
  const StackCapabilities fsdp = load_stack("pytorch-fsdp").capabilities;
  CHECK_FALSE(fsdp.tensor_parallel);
  CHECK_FALSE(fsdp.pipeline_parallel);
  CHECK_FALSE(has(fsdp.zero_stages, int64_t{1}));
  // Parallax's executor: what check_runnable accepts.
  const StackCapabilities ex = load_stack("parallax-executor").capabilities;
  CHECK(ex.zero_stages == std::vector<int64_t>{0, 1});
  CHECK(ex.positions == (std::vector<Position>{Position::learned, Position::rope}));
  CHECK(ex.grouped_query_attention);
  CHECK(ex.uneven_stages == UnevenStages::none);
  CHECK(ex.exporter == Exporter::parallax);
  // A stack without a table is not restricted.
  CHECK(load_stack("other").capabilities == StackCapabilities{});
}

TEST_CASE("stack capabilities: bad tables name their field") {
  auto error_of = [](const nlohmann::json& caps) {
    const nlohmann::json st = {{"name", "s"}, {"source", "x"}, {"attention", "fused"}, {"capabilities", caps}};
    JsonObjectReader r(st, "stack.json");
    try {
      read_stack(r);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(error_of({{"zero", {0, 4}}, {"source", "y"}}), Catch::Contains("$.capabilities.zero[1]"));
  CHECK_THAT(error_of({{"zero", {1, 1}}, {"source", "y"}}),
             Catch::Contains("$.capabilities.zero[1]") && Catch::Contains("repeats"));
  CHECK_THAT(error_of({{"zero", nlohmann::json::array()}, {"source", "y"}}),
             Catch::Contains("$.capabilities.zero") && Catch::Contains("non-empty array"));
  CHECK_THAT(error_of({{"schedules", {"zigzag"}}, {"source", "y"}}),
             Catch::Contains("$.capabilities.schedules[0]"));
  CHECK_THAT(error_of({{"export", "slurm"}, {"source", "y"}}), Catch::Contains("$.capabilities.export"));
  CHECK_THAT(error_of({{"zero", {0, 1}}}), Catch::Contains("$.capabilities.source"));
  CHECK_THAT(error_of({{"zero", {0, 1}}, {"source", "y"}, {"hsdp", true}}), Catch::Contains("hsdp"));
  CHECK(error_of({{"zero", {0, 1}}, {"source", "y"}}) == "accepted");
}

TEST_CASE("DeepSpeed cuts stages itself: only its balanced split of layers that do not divide") {
  // BLOOM's 70 layers on pp 12: partition_balanced over unit weights has bottleneck
  // ceil(70 / 12) = 6, filled from the first stage: 11 x 6 = 66, the last 4.
  ModelSpec m;
  m.layers = 70;
  m.heads = m.kv_heads = 112;
  JobSpec j;
  j.framework = "megatron-deepspeed";
  j.capabilities = load_stack("megatron-deepspeed").capabilities;
  PlanSpec p;
  p.pp = 12;
  p.first_stage_layers = 6;
  p.last_stage_layers = 4;
  CHECK_FALSE(stack_refusal(m, j, p).has_value());
  p.first_stage_layers = 5;  // 5 + 10 x 6 + 5: Megatron-LM could, DeepSpeed does not
  p.last_stage_layers = 5;
  const auto r = stack_refusal(m, j, p);
  REQUIRE(r.has_value());
  CHECK(r->path == "$.plan.first_stage_layers");
  CHECK_THAT(r->rule, Catch::Contains("run as 6 per stage and 4 on the last"));
  // Megatron-LM takes any first and last stage size.
  j.capabilities = load_stack("megatron-lm").capabilities;
  CHECK_FALSE(stack_refusal(m, j, p).has_value());
}

TEST_CASE("a dispatcher the stack does not list is refused with the stack's own list") {
  const ModelSpec m = load_model("moe-tiny");
  JobSpec j;
  j.framework = "megatron-core";
  j.capabilities = load_stack("megatron-core").capabilities;
  PlanSpec p;
  p.ep = 2;
  p.moe_dispatcher = MoeDispatcher::hybridep;
  CHECK_FALSE(stack_refusal(m, j, p).has_value());  // Megatron-Core lists all three
  // A stack that ran alltoall and DeepEP but not HybridEP (Megatron-Core before HybridEP landed).
  j.capabilities.moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep};
  const auto r = stack_refusal(m, j, p);
  REQUIRE(r.has_value());
  CHECK(r->path == "$.plan.moe_dispatcher");
  CHECK(r->rule == "stack \"megatron-core\" runs the alltoall and deepep token dispatchers only (got hybridep)");
  j.capabilities.moe_dispatchers = {MoeDispatcher::alltoall};
  CHECK(stack_refusal(m, j, p)->rule == "stack \"megatron-core\" runs the alltoall token dispatcher only (got hybridep)");
}

TEST_CASE("dispatcher names read back to the dispatcher they spell") {
  for (MoeDispatcher d : kMoeDispatchers)
    CHECK(moe_dispatcher_from(to_string(d)) == d);
  CHECK_FALSE(moe_dispatcher_from("ncclep").has_value());  // Megatron-Core's third flex backend
  CHECK_FALSE(moe_dispatcher_from("flex").has_value());
}
