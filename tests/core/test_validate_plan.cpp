// Each invariant of validate_plan, broken once, on a GPT-3 175B / 1024-GPU base that is valid.
#include "core_test_util.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax::test {
namespace {

struct Setup {
  ModelSpec m = read_as(base_model(), read_model);
  ClusterSpec c = read_as(base_cluster(), read_cluster);
  JobSpec j = read_as(base_job(), read_job);
  PlanSpec p = read_as(base_plan(), read_plan);
  int64_t gpus = 1024;

  void validate() const { validate_plan(m, c, j, p, gpus, "plan.json"); }
  void set_grid(int64_t tp, int64_t pp, int64_t dp) {
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    gpus = tp * pp * dp;
  }
};

}  // namespace

TEST_CASE("validate_plan: the base plan is valid", "[core][validate]") {
  Setup s;
  CHECK_NOTHROW(s.validate());
  s.p.num_micro_batches = 96;  // given and consistent
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: tp*pp*dp must equal gpus", "[core][validate]") {
  Setup s;
  s.gpus = 1000;
  require_input_error([&] { s.validate(); }, "$.plan",
                      {"plan.json", "tp (8) * pp (8) * dp (16) = 1024 must equal gpus (1000)"});
}

TEST_CASE("validate_plan: gpus must fit the cluster", "[core][validate]") {
  Setup s;
  s.set_grid(8, 8, 32);
  require_input_error([&] { s.validate(); }, "$.gpus", {"gpus (2048) must be <=", "= 1120"});
  s.gpus = 0;
  require_input_error([&] { s.validate(); }, "$.gpus", {"must be >= 1 (got 0)"});
}

TEST_CASE("validate_plan: heads divisible by tp", "[core][validate]") {
  Setup s;
  s.set_grid(5, 8, 16);
  require_input_error([&] { s.validate(); }, "$.plan.tp",
                      {"plan.json: $.plan.tp: heads (96) must be divisible by tp (5)"});
}

TEST_CASE("validate_plan: kv_heads divisible by tp", "[core][validate]") {
  Setup s;
  s.m.kv_heads = 4;
  require_input_error([&] { s.validate(); }, "$.plan.tp",
                      {"kv_heads (4) must be divisible by tp (8)"});
}

TEST_CASE("validate_plan: ffn_hidden divisible by tp", "[core][validate]") {
  Setup s;
  s.m.ffn_hidden = 49156;
  require_input_error([&] { s.validate(); }, "$.plan.tp",
                      {"ffn_hidden (49156) must be divisible by tp (8)"});
}

TEST_CASE("validate_plan: vocab need not divide tp (Megatron pads it)", "[core][validate]") {
  Setup s;
  REQUIRE(s.m.vocab % s.p.tp != 0);
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: layers divisible by pp", "[core][validate]") {
  Setup s;
  s.m.layers = 105;
  s.set_grid(8, 4, 32);
  require_input_error([&] { s.validate(); }, "$.plan.pp",
                      {"layers (105) must be divisible by pp (4)"});
}

TEST_CASE("validate_plan: global batch divisible by micro_batch * dp", "[core][validate]") {
  Setup s;
  s.p.micro_batch = 5;
  require_input_error([&] { s.validate(); }, "$.plan.micro_batch",
                      {"global_batch (1536) must be divisible by micro_batch (5) * dp (16) = 80"});
}

TEST_CASE("validate_plan: num_micro_batches must match the batch", "[core][validate]") {
  Setup s;
  s.p.num_micro_batches = 50;
  require_input_error(
      [&] { s.validate(); }, "$.plan.num_micro_batches",
      {"must equal global_batch (1536) / (micro_batch (1) * dp (16)) = 96 (got 50)"});
}

TEST_CASE("validate_plan: vpp > 1 needs the interleaved schedule", "[core][validate]") {
  Setup s;
  s.p.vpp = 2;
  s.p.schedule = Schedule::one_f_one_b;
  require_input_error([&] { s.validate(); }, "$.plan.schedule",
                      {"vpp (2) > 1 requires schedule \"interleaved\" (got \"1f1b\")"});
  s.p.schedule = Schedule::interleaved;
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: vpp > 1 needs pp >= 2", "[core][validate]") {
  Setup s;
  s.set_grid(8, 1, 128);
  s.p.vpp = 2;
  s.p.schedule = Schedule::interleaved;
  require_input_error([&] { s.validate(); }, "$.plan.vpp",
                      {"vpp (2) > 1 requires pp >= 2 (got pp 1)"});
}

TEST_CASE("validate_plan: layers divisible by pp * vpp", "[core][validate]") {
  Setup s;
  s.p.vpp = 5;
  s.p.schedule = Schedule::interleaved;
  require_input_error([&] { s.validate(); }, "$.plan.vpp",
                      {"layers (96) must be divisible by pp (8) * vpp (5) = 40"});
}

TEST_CASE("validate_plan: interleaved needs num_micro_batches divisible by pp",
          "[core][validate]") {
  Setup s;
  s.j.global_batch = 1520;  // 1520 / 16 = 95 micro-batches
  s.p.vpp = 2;
  s.p.schedule = Schedule::interleaved;
  require_input_error([&] { s.validate(); }, "$.plan.num_micro_batches",
                      {"num_micro_batches (95) must be divisible by pp (8)", "interleaved"});
  s.p.vpp = 1;
  s.p.schedule = Schedule::one_f_one_b;
  CHECK_NOTHROW(s.validate());  // plain 1F1B runs any number of micro-batches
}

TEST_CASE("validate_plan: micro-batch groups follow Megatron-Core's rule", "[core][validate]") {
  Setup s;
  s.j.global_batch = 1520;  // 95 micro-batches on pp 8
  s.p.vpp = 2;
  s.p.schedule = Schedule::interleaved;
  s.p.microbatch_group = 19;  // 95 % 19 = 0
  // The base job's stack, megatron-lm (2021-2022), walks groups of pp only.
  require_input_error([&] { s.validate(); }, "$.plan.microbatch_group",
                      {"stack \"megatron-lm\" runs interleaved micro-batches in groups of pp (8) only"});
  s.j.framework = "megatron-core";
  s.j.capabilities = load_stack("megatron-core").capabilities;
  CHECK_NOTHROW(s.validate());
  s.p.microbatch_group = 9;  // 95 % 9 = 5 < pp
  require_input_error([&] { s.validate(); }, "$.plan.microbatch_group",
                      {"num_micro_batches (95) % microbatch_group (9) = 5", "smaller than pp (8)"});
  s.p.microbatch_group = 6;  // below pp
  require_input_error([&] { s.validate(); }, "$.plan.microbatch_group", {"[pp, num_micro_batches] = [8, 95]"});
  s.p.microbatch_group = 12;  // 95 % 12 = 11 >= 8: the last group is large enough
  CHECK_NOTHROW(s.validate());
  s.p.vpp = 1;
  s.p.schedule = Schedule::one_f_one_b;
  require_input_error([&] { s.validate(); }, "$.plan.microbatch_group", {"need the interleaved schedule"});
}

TEST_CASE("validate_plan: interleaved schedule needs vpp > 1", "[core][validate]") {
  Setup s;
  s.p.schedule = Schedule::interleaved;
  require_input_error([&] { s.validate(); }, "$.plan.schedule",
                      {"schedule \"interleaved\" requires vpp > 1 (got vpp 1)"});
}

TEST_CASE("validate_plan: sequence parallelism needs tp > 1", "[core][validate]") {
  Setup s;
  s.set_grid(1, 8, 128);
  s.p.micro_batch = 3;  // 1536 / (3 * 128) = 4
  s.p.sequence_parallel = true;
  require_input_error([&] { s.validate(); }, "$.plan.sequence_parallel",
                      {"requires tp > 1 (got tp 1)"});
  Setup t;
  t.p.sequence_parallel = true;
  CHECK_NOTHROW(t.validate());
  t.m.seq_len = 2050;
  require_input_error([&] { t.validate(); }, "$.plan.sequence_parallel",
                      {"seq_len (2050) must be divisible by tp (8)"});
}

TEST_CASE("validate_plan: recompute_layers only with full recompute, at most layers per stage",
          "[core][validate]") {
  Setup s;
  s.p.recompute = Recompute::selective;
  s.p.recompute_layers = 4;
  require_input_error([&] { s.validate(); }, "$.plan.recompute_layers",
                      {"recompute_layers (4) requires recompute \"full\" (got \"selective\")"});
  s.p.recompute = Recompute::full;
  s.p.recompute_layers = 13;
  require_input_error([&] { s.validate(); }, "$.plan.recompute_layers",
                      {"must be <= layers (96) / pp (8) = 12 (got 13)"});
  s.p.recompute_layers = 12;
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: ZeRO-2/3 with pipeline parallelism is a trainer rule",
          "[core][validate]") {
  Setup s;
  s.p.zero = 2;
  require_input_error([&] { s.validate(); }, "$.plan.zero",
                      {"trainer rule: ZeRO-2/3 not supported with pp > 1", "pp 8"});
  s.p.zero = 1;  // distributed optimizer works with any pp
  CHECK_NOTHROW(s.validate());
  s.set_grid(8, 1, 128);
  s.p.zero = 3;
  s.j.capabilities.zero_stages = {0, 1, 2, 3};  // a stack that shards (Megatron FSDP, DeepSpeed)
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: unequal virtual stages only on a stack that cuts them (TorchTitan)",
          "[core][validate]") {
  Setup s;  // 96 layers on pp 8
  s.p.vpp = 2;
  s.p.schedule = Schedule::interleaved;
  s.p.first_stage_layers = 9;
  s.p.last_stage_layers = 9;  // 9 + 6 x 13 + 9 = 96
  require_input_error([&] { s.validate(); }, "$.plan.first_stage_layers",
                      {"does not combine with interleaving (vpp 2)"});
  s.j.pipeline.unequal_virtual_stages = true;
  CHECK_NOTHROW(s.validate());
  // Each of a stage's virtual stages needs a layer: 10 on 9-layer stages cannot be cut.
  s.p.vpp = 10;
  require_input_error([&] { s.validate(); }, "$.plan.vpp", {"exceeds the 9 layers of pipeline stage 0"});
}

TEST_CASE("validate_plan: a stack that shards inside pipeline stages admits ZeRO-3 with pp",
          "[core][validate]") {
  Setup s;
  s.p.zero = 3;
  s.j.capabilities.zero_stages = {0, 2, 3};
  s.j.pipeline.sharded_stages = true;  // TorchTitan: FSDP2 per stage
  CHECK_NOTHROW(s.validate());
  s.j.pipeline.sharded_stages = false;
  require_input_error([&] { s.validate(); }, "$.plan.zero", {"pp 8"});
}

TEST_CASE("validate_plan: tp beyond one node is a planner choice, not an error",
          "[core][validate]") {
  Setup s;
  s.set_grid(16, 4, 16);
  CHECK_NOTHROW(s.validate());
}

TEST_CASE("validate_plan: the GPU must have math in the job's dtype", "[core][validate]") {
  Setup s;
  s.j.dtype = Dtype::fp8;
  require_input_error([&] { s.validate(); }, "$.job.dtype", {"has no fp8 math"});
}

TEST_CASE("validate_plan: plans built in code are range-checked", "[core][validate]") {
  Setup s;
  s.p.tp = 0;
  require_input_error([&] { s.validate(); }, "$.plan.tp", {"must be >= 1 (got 0)"});
  Setup t;
  t.p.order = "pp-tp";
  require_input_error([&] { t.validate(); }, "$.plan.order", {"tp, dp and pp"});
  Setup u;
  u.p.zero = 7;
  require_input_error([&] { u.validate(); }, "$.plan.zero", {"must be 0, 1, 2 or 3 (got 7)"});
  Setup v;
  v.set_grid(1, 1, 1);
  v.p.tp = int64_t{1} << 40;  // the product saturates instead of overflowing
  v.p.pp = int64_t{1} << 40;
  require_input_error([&] { v.validate(); }, "$.plan", {"must equal gpus (1)"});
}

TEST_CASE("validate_plan: the stack's capability table refuses what the stack cannot run",
          "[core][validate]") {
  Setup s;  // the job's stack is megatron-lm: ZeRO 0 or 1, 1F1B or interleaved, no ALiBi
  REQUIRE(s.j.framework == "megatron-lm");
  s.set_grid(8, 1, 128);
  s.p.zero = 3;
  require_input_error([&] { s.validate(); }, "$.plan.zero",
                      {"stack \"megatron-lm\" runs ZeRO stage 0 or 1 (got 3)"});
  s.p.zero = 1;
  s.p.schedule = Schedule::gpipe;
  require_input_error([&] { s.validate(); }, "$.plan.schedule",
                      {"stack \"megatron-lm\" has no gpipe schedule"});
  s.p.schedule = Schedule::one_f_one_b;
  s.m.position = Position::alibi;
  require_input_error([&] { s.validate(); }, "$.model.position",
                      {"has no alibi position embedding"});
  s.m.position = Position::learned;
  CHECK_NOTHROW(s.validate());
  // A table without tensor parallelism (LLM Foundry's FSDP) refuses tp 8.
  s.j.framework = "llm-foundry";
  s.j.capabilities.tensor_parallel = false;
  require_input_error([&] { s.validate(); }, "$.plan.tp",
                      {"stack \"llm-foundry\" has no tensor parallelism (got tp 8)"});
  s.j.capabilities = StackCapabilities{};  // no table: nothing restricted
  s.p.zero = 3;
  CHECK_NOTHROW(s.validate());
}

}  // namespace parallax::test

namespace parallax::test {

TEST_CASE("validate_plan: context parallelism", "[core][validate]") {
  // The base: GPT-3 175B (seq 2048, 96 heads) on 1024 GPUs as tp 8 x pp 8 x dp 16; here cp 2
  // takes half the data-parallel ranks, on a stack that runs it (Megatron-Core).
  Setup s;
  apply_stack(load_stack("megatron-core"), s.j);
  s.p.cp = 2;
  s.p.dp = 8;
  s.p.micro_batch = 1;  // 1536 / (1 * 8) = 192 micro-batches
  CHECK_NOTHROW(s.validate());
  s.p.dp = 16;  // 8 * 2 * 8 * 16 = 2048 GPUs for 1024
  require_input_error([&] { s.validate(); }, "$.plan",
                      {"tp (8) * cp (2) * pp (8) * dp (16) = 2048 must equal gpus (1024)"});
  Setup zero;
  zero.p.cp = 0;
  require_input_error([&] { zero.validate(); }, "$.plan.cp", {"must be >= 1 (got 0)"});
  // The ring runs inside a fused attention kernel.
  Setup unfused;
  unfused.j.capabilities = load_stack("megatron-core").capabilities;
  unfused.j.attention = Attention::unfused;
  unfused.p.cp = 2;
  unfused.p.dp = 8;
  require_input_error([&] { unfused.validate(); }, "$.plan.cp",
                      {"context parallelism needs fused attention", "the job's attention is unfused"});
  // Causal load balancing: 2 * cp chunks of the sequence.
  Setup odd;
  odd.m.seq_len = 2046;  // even, but not a multiple of 2 * 2 = 4
  odd.p.cp = 2;
  odd.p.dp = 8;
  require_input_error([&] { odd.validate(); }, "$.plan.cp",
                      {"seq_len (2046) must be divisible by 2 * cp = 4",
                       "chunks i and 2cp-1-i"});
  // With sequence parallelism each cp rank's seq_len / cp tokens are split over tp.
  Setup sp;
  apply_stack(load_stack("megatron-core"), sp.j);
  sp.m.seq_len = 2048 + 32;  // 2080 / 4 = 520 chunks ok; 2080 / 2 = 1040 = 8 * 130 ok
  sp.p.cp = 2;
  sp.p.dp = 8;
  sp.p.sequence_parallel = true;
  CHECK_NOTHROW(sp.validate());
  sp.m.seq_len = 2048 + 8;  // 2056 / 4 = 514; 2056 / 2 = 1028, not a multiple of 8
  require_input_error([&] { sp.validate(); }, "$.plan.sequence_parallel",
                      {"seq_len / cp (2056 / 2 = 1028) must be divisible by tp (8)"});
}

TEST_CASE("validate_plan: a stack without context parallelism refuses it, with its reason",
          "[core][validate]") {
  Setup s;
  s.p.cp = 2;
  s.p.dp = 8;
  s.p.micro_batch = 1;
  s.j.framework = "deepspeed";
  s.j.capabilities = load_stack("deepspeed").capabilities;
  s.p.schedule = Schedule::one_f_one_b;
  require_input_error([&] { s.validate(); }, "$.plan.cp",
                      {"stack \"deepspeed\" has no context parallelism (got cp 2): its sequence "
                       "parallelism is DeepSpeed-Ulysses"});
  // Parallax's executor runs it too (all-gathered keys and values; test_equivalence).
  for (const char* stack : {"megatron-core", "nemo", "nemo-1", "torchtitan", "parallax-executor"})
    CHECK(load_stack(stack).capabilities.context_parallel);
  // Megatron-LM of 2021-2022 (unfused attention) predates context parallelism.
  for (const char* stack : {"megatron-lm", "deepspeed", "megatron-deepspeed", "pytorch-fsdp", "llm-foundry"})
    CHECK_FALSE(load_stack(stack).capabilities.context_parallel);
}

}  // namespace parallax::test
