// The "moe" object of a model file: defaults, every field, the write/read round trip, which layers
// are MoE, each rule broken once, and the refusal of an MoE model by validate_plan.
#include "core_test_util.hpp"
#include "parallax/core/param_counts.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::test {
namespace {

// Mixtral 8x7B's mixture (Jiang et al. 2024, Table 1) on the base model's shape.
json mixtral_like() {
  json j = base_model();
  j["moe"] = {{"num_experts", 8}, {"top_k", 2}, {"expert_ffn_hidden", 14336}};
  return j;
}

void require_moe_error(const json& j, const std::string& key, std::initializer_list<std::string> words) {
  require_input_error([&] { (void)read_as(j, read_model); }, "$.moe." + key, words);
}

}  // namespace

TEST_CASE("moe: absent is a dense model", "[core][model][moe]") {
  const ModelSpec m = read_as(base_model(), read_model);
  CHECK_FALSE(m.is_moe());
  CHECK(m.moe == MoeSpec{});
  CHECK(m.moe_layers() == 0);
  CHECK_FALSE(to_json(m).contains("moe"));  // dense files stay as they were
  // num_experts 0 alone says the same.
  json j = base_model();
  j["moe"] = {{"num_experts", 0}};
  CHECK_FALSE(read_as(j, read_model).is_moe());
}

TEST_CASE("moe: defaults of the optional fields", "[core][model][moe]") {
  const ModelSpec m = read_as(mixtral_like(), read_model);
  REQUIRE(m.is_moe());
  CHECK(m.moe.num_experts == 8);
  CHECK(m.moe.top_k == 2);
  CHECK(m.moe.expert_ffn_hidden == 14336);
  CHECK(m.moe.shared_experts == 0);
  CHECK(m.moe.shared_expert_ffn_hidden == 0);
  CHECK(m.moe.layer_freq == 1);
  CHECK(m.moe.first_k_dense == 0);
  CHECK(m.moe.router == Router::softmax);
  CHECK(m.moe.aux_loss_coeff == 0);   // Megatron-Core's --moe-aux-loss-coeff default
  CHECK(m.moe.capacity_factor == 0);  // dropless, Megatron-Core's default
  CHECK(m.moe_layers() == 96);        // every layer
}

TEST_CASE("moe: every field, and which layers are MoE", "[core][model][moe]") {
  // DeepSeek-V3's layout (config.json: first_k_dense_replace 3, moe_layer_freq 1) on 61 layers.
  json j = base_model();
  j["layers"] = 61;
  j["moe"] = {{"num_experts", 256},  {"top_k", 8},         {"expert_ffn_hidden", 2048},
              {"shared_experts", 1}, {"shared_expert_ffn_hidden", 2048},
              {"layer_freq", 1},     {"first_k_dense", 3}, {"router", "sigmoid"},
              {"aux_loss_coeff", 0.0001}, {"capacity_factor", 1.25}};
  ModelSpec m = read_as(j, read_model);
  CHECK(m.moe.shared_experts == 1);
  CHECK(m.moe.shared_expert_ffn_hidden == 2048);
  CHECK(m.moe.router == Router::sigmoid);
  CHECK(m.moe.aux_loss_coeff == 0.0001);
  CHECK(m.moe.capacity_factor == 1.25);
  CHECK_FALSE(m.is_moe_layer(2));
  CHECK(m.is_moe_layer(3));
  CHECK(m.is_moe_layer(60));
  CHECK(m.moe_layers() == 58);  // the report's 61 - 3
  // Every other layer from the first (Megatron-Core --moe-layer-freq 2: layer i when i % 2 == 0).
  j["moe"]["first_k_dense"] = 0;
  j["moe"]["layer_freq"] = 2;
  m = read_as(j, read_model);
  CHECK(m.is_moe_layer(0));
  CHECK_FALSE(m.is_moe_layer(1));
  CHECK(m.moe_layers() == 31);  // layers 0, 2, ..., 60
}

TEST_CASE("moe: write then read round trips", "[core][model][moe][roundtrip]") {
  for (const char* preset : {"mixtral-8x7b", "mixtral-8x22b", "deepseek-v3-shaped", "qwen1.5-moe-a2.7b", "moe-tiny"}) {
    INFO("preset " << preset);
    const ModelSpec m = load_model(preset);
    REQUIRE(m.is_moe());
    const json j = to_json(m);
    const ModelSpec back = read_as(j, read_model);
    CHECK(back.moe == m.moe);
    CHECK(to_json(back) == j);
  }
}

TEST_CASE("moe: each rule broken once", "[core][model][moe]") {
  json j = mixtral_like();
  j["moe"]["top_k"] = 9;
  require_moe_error(j, "top_k", {"must be <= num_experts (8) (got 9)"});
  j["moe"]["top_k"] = 0;
  require_moe_error(j, "top_k", {"must be an integer >= 1 (got 0)"});
  j = mixtral_like();
  j["moe"].erase("top_k");
  require_moe_error(j, "top_k", {"is required"});
  j = mixtral_like();
  j["moe"]["expert_ffn_hidden"] = 0;
  require_moe_error(j, "expert_ffn_hidden", {"must be an integer >= 1 (got 0)"});
  j = mixtral_like();
  j["moe"]["num_experts"] = -1;
  require_moe_error(j, "num_experts", {"must be an integer >= 0 (got -1)"});
  j = mixtral_like();
  j["moe"]["first_k_dense"] = 96;
  require_moe_error(j, "first_k_dense", {"must be < layers (96)", "(got 96)"});
  j = mixtral_like();
  j["moe"]["layer_freq"] = 0;
  require_moe_error(j, "layer_freq", {"must be an integer >= 1 (got 0)"});
  // The first 95 layers dense and every 2nd from 0: layer 95 is odd, so none is MoE.
  j["moe"]["layer_freq"] = 2;
  j["moe"]["first_k_dense"] = 95;
  require_moe_error(j, "layer_freq", {"leaves no MoE layer among layers 95 to 95 (got 2)"});
  j = mixtral_like();
  j["moe"]["capacity_factor"] = -1;
  require_moe_error(j, "capacity_factor", {"must be >= 0 (got -1)"});
  j = mixtral_like();
  j["moe"]["aux_loss_coeff"] = 2;
  require_moe_error(j, "aux_loss_coeff", {"must be <= 1 (got 2)"});
  j = mixtral_like();
  j["moe"]["router"] = "topk";
  require_moe_error(j, "router", {"must be one of \"softmax\", \"sigmoid\" (got \"topk\")"});
  j = mixtral_like();
  j["moe"]["shared_experts"] = 1;
  require_moe_error(j, "shared_expert_ffn_hidden", {"is required"});
  j = mixtral_like();
  j["moe"]["shared_expert_ffn_hidden"] = 2048;
  require_moe_error(j, "shared_expert_ffn_hidden", {"needs shared_experts >= 1 (shared_experts is 0)"});
  j = mixtral_like();
  j["moe"]["experts"] = 8;  // the corpus's spelling, not the model file's
  require_moe_error(j, "experts", {"unknown key \"experts\""});
  // A field of a mixture of experts on a dense model would be ignored: refused.
  j = base_model();
  j["moe"] = {{"num_experts", 0}, {"top_k", 2}};
  require_moe_error(j, "top_k", {"needs num_experts >= 1 (num_experts 0 is a dense model)"});
}

TEST_CASE("moe: stated parameter counts are checked, not read", "[core][model][moe]") {
  json j = mixtral_like();
  const ModelSpec m = read_as(j, read_model);
  j["parameters"] = param_counts_json(m);
  CHECK_NOTHROW(read_as(j, read_model));
  j["parameters"]["active"] = j["parameters"]["active"].get<int64_t>() + 1;
  require_input_error([&] { (void)read_as(j, read_model); }, "$.parameters.active",
                      {"must equal the count derived from the model's shape", "counts are derived, not read"});
}

TEST_CASE("moe: validate_plan's expert-parallel rules", "[core][validate][moe]") {
  const ModelSpec m = read_as(mixtral_like(), read_model);
  const ModelSpec dense = read_as(base_model(), read_model);
  const ClusterSpec c = read_as(base_cluster(), read_cluster);
  json job = base_job();
  const JobSpec megatron_lm = read_as(job, read_job);
  job["framework"] = "megatron-core";
  const JobSpec core = read_as(job, read_job);
  json plan = base_plan();  // tp 8, pp 8, dp 16: 128 ranks per stage
  plan["sequence_parallel"] = true;
  plan["ep"] = 8;
  const PlanSpec p = read_as(plan, read_plan);
  CHECK_NOTHROW(validate_plan(m, c, core, p, 1024, "plan.json"));
  // A stack without an MoE layer says so, naming the model's experts.
  require_input_error([&] { validate_plan(m, c, megatron_lm, p, 1024, "plan.json"); },
                      "$.model.moe.num_experts", {"plan.json", "stack \"megatron-lm\" runs dense models only"});
  // ep must divide the experts (Megatron-LM's arguments.py asserts it).
  PlanSpec q = p;
  q.ep = 3;
  require_input_error([&] { validate_plan(m, c, core, q, 1024, "plan.json"); }, "$.plan.ep",
                      {"num_experts (8) must be divisible by ep (3)"});
  // etp x ep must divide the stage's tp x cp x dp = 128 ranks: etp 8 x ep 8 does; 32 x 8 does not.
  q = p;
  q.etp = 32;
  require_input_error([&] { validate_plan(m, c, core, q, 1024, "plan.json"); }, "$.plan.ep",
                      {"etp (32) * ep (8) must divide tp * cp * dp (128)"});
  // Each expert's FFN splits over etp: 14336 % 3 != 0.
  q = p;
  q.ep = 1;
  q.etp = 3;
  require_input_error([&] { validate_plan(m, c, core, q, 1024, "plan.json"); }, "$.plan.ep", {"etp (3)"});
  // tp > 1 without sequence parallelism (megatron/core/transformer/moe/moe_layer.py raises).
  q = p;
  q.sequence_parallel = false;
  require_input_error([&] { validate_plan(m, c, core, q, 1024, "plan.json"); }, "$.plan.sequence_parallel",
                      {"needs sequence parallelism"});
  // A dense model has no experts to split.
  require_input_error([&] { validate_plan(dense, c, core, p, 1024, "plan.json"); }, "$.plan.ep",
                      {"expert parallelism needs a mixture-of-experts model"});
}

}  // namespace parallax::test
