// Uneven pipeline splits (Megatron-LM's --decoder-first/last-pipeline-num-layers): the layers of
// each stage and the rules that make a split runnable.
#include <catch2/catch.hpp>

#include <algorithm>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"

using namespace parallax;

namespace {

PlanSpec uneven(int64_t pp, int64_t first, int64_t last) {
  PlanSpec p;
  p.tp = 8;
  p.pp = pp;
  p.dp = 1;
  p.first_stage_layers = first;
  p.last_stage_layers = last;
  p.num_micro_batches = 0;  // derived from the batch
  return p;
}

void check(const PlanSpec& p) {
  const ModelSpec m = load_model("gpt3-175b");  // 96 layers
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  JobSpec j;
  j.global_batch = 64;
  validate_plan(m, c, j, p, p.gpus(), "test");
}

}  // namespace

TEST_CASE("stage_layers: first and last stages given, the rest split evenly") {
  const PlanSpec p = uneven(7, 3, 3);  // 96 = 3 + 5 x 18 + 3
  CHECK(stage_layers(96, p, 0) == 3);
  for (int64_t k = 1; k < 6; ++k) CHECK(stage_layers(96, p, k) == 18);
  CHECK(stage_layers(96, p, 6) == 3);
  const PlanSpec only_first = uneven(5, 16, 0);  // 96 = 16 + 4 x 20
  CHECK(stage_layers(96, only_first, 0) == 16);
  CHECK(stage_layers(96, only_first, 4) == 20);
  CHECK(stage_layers(96, uneven(4, 0, 0), 2) == 24);
}

TEST_CASE("DeepSpeed's partition counting the two embedding layers: 70 layers on 12 stages") {
  // DeepSpeed's PipelineModule with partition_method 'type:transformer|embedding' balances the 70
  // blocks and the two EmbeddingPipe layers, 72 items, 6 per stage: the first stage holds the
  // embedding and 5 blocks, the last 5 blocks and the tied output embedding. As a plan: first
  // and last stage 5 layers, the 10 between 6 each.
  ModelSpec m = load_model("gpt3-175b");
  m.layers = 70;
  PlanSpec p = uneven(12, 5, 5);
  p.tp = 4;
  int64_t total = 0;
  for (int64_t k = 0; k < 12; ++k) {
    CHECK(stage_layers(70, p, k) == (k == 0 || k == 11 ? 5 : 6));
    total += stage_layers(70, p, k);
  }
  CHECK(total == 70);
  JobSpec j;
  j.global_batch = 64;
  CHECK_NOTHROW(validate_plan(m, load_cluster("dgx-a100-superpod"), j, p, p.gpus(), "test"));
  // Without the split 70 does not divide over 12 and the plan is refused naming pp.
  CHECK_THROWS_WITH(validate_plan(m, load_cluster("dgx-a100-superpod"), j, uneven(12, 0, 0), 96, "test"),
                    Catch::Contains("$.plan.pp"));
}

TEST_CASE("DeepSpeed's balanced cut: ceil(layers / pp) per stage, the last the rest") {
  // BLOOM-176B: 70 / 12 = 5.8, so 6 per stage; 11 x 6 = 66, the last stage 70 - 66 = 4.
  const DeepspeedStageCut bloom = deepspeed_balanced_cut(70, 12);
  CHECK(bloom.stage_layers == 6);
  CHECK(bloom.last_stage_layers == 4);
  // 24 / 5 = 4.8 -> 5; 4 x 5 = 20, last 4.
  CHECK(deepspeed_balanced_cut(24, 5).stage_layers == 5);
  CHECK(deepspeed_balanced_cut(24, 5).last_stage_layers == 4);
  // An even split stays even: 96 / 8 = 12 on every stage, the last too (96 - 7 x 12 = 12).
  CHECK(deepspeed_balanced_cut(96, 8).stage_layers == 12);
  CHECK(deepspeed_balanced_cut(96, 8).last_stage_layers == 12);
  // 10 / 4 = 2.5 -> 3; 3 x 3 = 9, one layer left for the last stage.
  CHECK(deepspeed_balanced_cut(10, 4).stage_layers == 3);
  CHECK(deepspeed_balanced_cut(10, 4).last_stage_layers == 1);
  // 9 / 4 = 2.25 -> 3; 3 x 3 = 9 leaves the last stage empty; 5 / 4 -> 2, 3 x 2 = 6 overshoots by 1.
  CHECK(deepspeed_balanced_cut(9, 4).last_stage_layers == 0);
  CHECK(deepspeed_balanced_cut(5, 4).stage_layers == 2);
  CHECK(deepspeed_balanced_cut(5, 4).last_stage_layers == -1);
  // One stage holds everything: ceil(7 / 1) = 7, and the last (the same stage) 7 - 0 x 7 = 7.
  CHECK(deepspeed_balanced_cut(7, 1).stage_layers == 7);
  CHECK(deepspeed_balanced_cut(7, 1).last_stage_layers == 7);
}

TEST_CASE("uneven splits that do not add up are refused naming the field") {
  CHECK_NOTHROW(check(uneven(7, 3, 3)));
  CHECK_THROWS_WITH(check(uneven(7, 4, 3)), Catch::Contains("$.plan.first_stage_layers") &&
                                                Catch::Contains("split the remaining 89 layers"));
  CHECK_THROWS_WITH(check(uneven(2, 40, 40)), Catch::Contains("must equal layers (96)"));
  PlanSpec p = uneven(4, 12, 12);  // 96 = 12 + 2 x 36 + 12
  p.vpp = 2;
  p.schedule = Schedule::interleaved;
  CHECK_THROWS_WITH(check(p), Catch::Contains("interleaving"));
  // The even rule still applies without the fields.
  CHECK_THROWS_WITH(check(uneven(7, 0, 0)), Catch::Contains("layers (96) must be divisible by pp (7)"));
}

TEST_CASE("plan JSON carries the uneven split both ways") {
  const PlanSpec p = uneven(7, 3, 3);
  const nlohmann::json j = to_json(p);
  JsonObjectReader r(j, "test", "$.plan");
  CHECK(read_plan(r) == p);
}

// Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-
// split, as Megatron-Bridge's Qwen3-235B-A22B recipe runs them: 94 layers + embedding + loss = 96
// over pp 8 x vpp 4 = 32 virtual stages of 3; virtual stage 0 holds the embedding and 2 layers,
// virtual stage 31 2 layers and the loss (transformer_block.py get_num_layers_to_build).
TEST_CASE("the embedding and the loss counted in the pipeline split, by hand (Qwen3-235B-A22B)") {
  PlanSpec p = uneven(8, 0, 0);
  p.vpp = 4;
  p.schedule = Schedule::interleaved;
  p.embedding_in_split = p.loss_in_split = true;
  CHECK(stage_layers(94, p, 0) == 11);
  for (int64_t k = 1; k < 7; ++k) CHECK(stage_layers(94, p, k) == 12);
  CHECK(stage_layers(94, p, 7) == 11);
  // Stage 0 runs virtual stages 0, 8, 16, 24: layers 0-1, then 3 from 8 x 3 - 1 = 23 on.
  CHECK(stage_layer_ids(94, p, 0) == std::vector<int64_t>{0, 1, 23, 24, 25, 47, 48, 49, 71, 72, 73});
  // Stage 7 runs virtual stages 7, 15, 23, 31: the last holds 92 and 93 beside the loss.
  CHECK(stage_layer_ids(94, p, 7) == std::vector<int64_t>{20, 21, 22, 44, 45, 46, 68, 69, 70, 92, 93});
  // Every layer on exactly one stage.
  std::vector<int> seen(94, 0);
  for (int64_t k = 0; k < 8; ++k)
    for (int64_t l : stage_layer_ids(94, p, k)) ++seen[static_cast<size_t>(l)];
  CHECK(std::count(seen.begin(), seen.end(), 1) == 94);
  // Without interleaving: 96 / 8 = 12 per stage, the first and last 11, consecutive.
  p.vpp = 1;
  p.schedule = Schedule::one_f_one_b;
  CHECK(stage_layer_ids(94, p, 1).front() == 11);
  CHECK(stage_layer_ids(94, p, 7).back() == 93);
  // The embedding alone: 97 layers + 1 over pp 2: 48 and 49.
  p.pp = 2;
  p.loss_in_split = false;
  CHECK(stage_layers(97, p, 0) == 48);
  CHECK(stage_layers(97, p, 1) == 49);
}

TEST_CASE("the embedding and loss in the split: what Megatron-Core refuses is refused, naming the flag") {
  const ModelSpec m = load_model("gpt3-175b");  // 96 layers
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  JobSpec j;
  j.global_batch = 64;
  j.capabilities.pipeline_split_accounting = true;
  auto check_with = [&](const PlanSpec& p) { validate_plan(m, c, j, p, p.gpus(), "test"); };
  PlanSpec p = uneven(2, 0, 0);
  p.embedding_in_split = p.loss_in_split = true;
  CHECK_NOTHROW(check_with(p));  // 98 over pp 2: 48 and 48
  p.vpp = 7;                      // 98 over 14 virtual stages of 7
  p.schedule = Schedule::interleaved;
  CHECK_NOTHROW(check_with(p));
  p.vpp = 2;  // 98 / 4 does not divide
  CHECK_THROWS_WITH(check_with(p), Catch::Contains("$.plan.account_for_embedding_in_pipeline_split") &&
                                       Catch::Contains("layers (96) + 2 (embedding and loss) = 98 must be "
                                                       "divisible by pp (2) * vpp (2) = 4"));
  p.vpp = 1;
  p.schedule = Schedule::one_f_one_b;
  p.pp = 4;  // 98 over 4 stages
  CHECK_THROWS_WITH(check_with(p), Catch::Contains("= 98 must be divisible by pp (4)"));
  // Not with a first or last stage of its own (transformer_config.py raises).
  p = uneven(2, 48, 0);
  p.loss_in_split = true;
  CHECK_THROWS_WITH(check_with(p), Catch::Contains("$.plan.account_for_loss_in_pipeline_split") &&
                                       Catch::Contains("does not combine with first_stage_layers"));
  // A stack that does not count them (Megatron-LM of 2021, DeepSpeed, TorchTitan).
  p = uneven(2, 0, 0);
  p.embedding_in_split = p.loss_in_split = true;
  j.capabilities.pipeline_split_accounting = false;
  CHECK_THROWS_WITH(check_with(p), Catch::Contains("does not count the embedding or the loss"));
  CHECK(load_stack("megatron-core").capabilities.pipeline_split_accounting);
  CHECK_FALSE(load_stack("megatron-deepspeed").capabilities.pipeline_split_accounting);
}

TEST_CASE("plan JSON carries the embedding and loss in the split both ways") {
  PlanSpec p = uneven(2, 0, 0);
  p.embedding_in_split = true;
  const nlohmann::json j = to_json(p);
  CHECK(j.at("account_for_embedding_in_pipeline_split") == true);
  CHECK_FALSE(j.contains("account_for_loss_in_pipeline_split"));
  JsonObjectReader r(j, "test", "$.plan");
  CHECK(read_plan(r) == p);
}
