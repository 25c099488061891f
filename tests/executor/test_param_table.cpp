// The executor's size table against the memory model (costmodel/memory): per pipeline rank, the
// transformer-layer family and the total parameter count must agree; and the shards of every
// tensor over the TP ranks cover the global tensor exactly once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "parallax/core/param_table.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/memory.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

ModelSpec tiny(Activation a, Norm n, bool tied) {
  ModelSpec m = test::gpt_shape("tiny", 4, 64, 4, 256, 16, 200);
  m.activation = a;
  m.norm = n;
  m.tied_embeddings = tied;
  return m;
}

// Llama-style: grouped-query attention (4 query heads over 2 key/value heads), no biases.
ModelSpec tiny_llama() {
  ModelSpec m = tiny(Activation::swiglu, Norm::rmsnorm, false);
  m.kv_heads = 2;
  m.linear_bias = false;
  m.position = Position::rope;
  return m;
}

}  // namespace

TEST_CASE("size table agrees with the memory model per family and in total", "[executor]") {
  for (const auto& m : {tiny(Activation::gelu, Norm::layernorm, true),
                        tiny(Activation::swiglu, Norm::rmsnorm, false), tiny_llama()}) {
    for (auto [tp, pp, vpp] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {2, 2, 1}, {2, 2, 2}, {4, 4, 1}}) {
      if (m.kv_heads % tp != 0) continue;
      PlanSpec p;
      p.tp = tp;
      p.pp = pp;
      p.vpp = vpp;
      for (int64_t rank = 0; rank < pp; ++rank) {
        std::map<ParamFamily, double> family;
        double total = 0;
        for (int64_t c = 0; c < vpp; ++c)
          for (const auto& t : stage_param_table(m, p, c * pp + rank, 0)) {
            family[t.family] += static_cast<double>(t.numel());
            total += static_cast<double>(t.numel());
          }
        INFO("tp " << tp << " pp " << pp << " vpp " << vpp << " rank " << rank);
        CHECK(family[ParamFamily::layer] ==
              Approx(static_cast<double>(m.layers / pp) * layer_params_per_rank(m, tp)));
        CHECK(total == Approx(stage_params_per_rank(m, p, rank)));
      }
    }
  }
}

TEST_CASE("grouped-query QKV: each TP rank holds its query heads and whole key/value heads",
          "[executor]") {
  // hidden 64 = 4 heads of 16, 2 key/value heads: global QKV rows q [0, 64) k [64, 96) v [96, 128).
  const ModelSpec m = tiny_llama();
  PlanSpec p;
  p.tp = 2;
  for (int64_t r = 0; r < 2; ++r) {
    const auto table = stage_param_table(m, p, 0, r);
    const auto qkv = std::find_if(table.begin(), table.end(), [](const ParamTensor& t) {
      return t.name == "h.0.attn.c_attn.weight";
    });
    REQUIRE(qkv != table.end());
    CHECK(qkv->local_shape == std::vector<int64_t>{64, 64});  // 2 q heads + 1 k + 1 v, of 16 rows
    REQUIRE(qkv->segments.size() == 3);
    CHECK(qkv->segments[0].global_start == r * 32);       // q heads 2r, 2r+1
    CHECK(qkv->segments[1].global_start == 64 + r * 16);  // k head r
    CHECK(qkv->segments[2].global_start == 96 + r * 16);  // v head r
    CHECK(qkv->segments[2].local_start == 48);
    for (const auto& t : table) CHECK(t.name.find(".bias") == std::string::npos);
  }
}

TEST_CASE("TP shards cover every global element exactly once", "[executor]") {
  for (const ModelSpec& m : {tiny(Activation::swiglu, Norm::layernorm, true), tiny_llama()}) {
    PlanSpec p;
    p.tp = m.kv_heads == 2 ? 2 : 4;
    std::map<std::string, std::multiset<int64_t>> seen;
    std::map<std::string, int64_t> size;
    for (int64_t r = 0; r < p.tp; ++r)
      for (const auto& t : stage_param_table(m, p, 0, r)) {
        int64_t n = 1;
        for (int64_t d : t.global_shape) n *= d;
        size[t.name] = n;
        if (t.shard_dim < 0 && r > 0) continue;  // replicated: count once
        for (int64_t i = 0; i < t.numel(); ++i) seen[t.name].insert(global_flat_index(t, i));
      }
    for (const auto& [name, s] : seen) {
      INFO(name);
      CHECK(static_cast<int64_t>(s.size()) == size[name]);
      CHECK(static_cast<int64_t>(std::set<int64_t>(s.begin(), s.end()).size()) == size[name]);
    }
  }
}

TEST_CASE("expert parallelism: each ep rank holds its E/ep experts, the memory model's count",
          "[executor][moe]") {
  const ModelSpec m = load_model("moe-tiny");  // 8 routed experts, one shared, every layer MoE
  REQUIRE(m.moe.num_experts == 8);
  for (const int64_t tp : {1, 2}) {
    PlanSpec p;
    p.tp = tp;
    p.dp = 2;
    p.ep = 2;
    p.sequence_parallel = tp > 1;
    std::map<std::string, int> holders;  // each routed expert tensor: how many ep ranks hold it
    std::vector<std::string> dense_names[2];
    for (int64_t r = 0; r < p.ep; ++r) {
      double experts = 0;
      for (const auto& t : stage_param_table(m, p, 0, 0, 0, r)) {
        const bool routed = t.name.find(".mlp.experts.") != std::string::npos;
        CHECK(t.expert == routed);
        if (!routed) {
          dense_names[r].push_back(t.name);
          continue;
        }
        ++holders[t.name];
        experts += static_cast<double>(t.numel());
        // Rank r's experts are [4r, 4r + 4).
        const int64_t e = std::stoll(t.name.substr(t.name.find(".mlp.experts.") + 13));
        INFO(t.name << " on ep rank " << r);
        CHECK(e / 4 == r);
      }
      INFO("tp " << tp << " ep rank " << r);
      CHECK(experts == Approx(stage_expert_params_per_rank(m, p, 0)));
    }
    CHECK(dense_names[0] == dense_names[1]);
    // Every expert of every layer, once: layers x 8 experts x (c_fc, c_proj).
    CHECK(holders.size() == static_cast<size_t>(m.layers * 8 * 2));
    for (const auto& [name, n] : holders) CHECK(n == 1);
  }
  PlanSpec p;
  p.ep = 2;
  CHECK_THROWS_AS(stage_param_table(m, p, 0, 0, 0, 2), std::out_of_range);
  p.ep = 3;
  CHECK_THROWS_AS(stage_param_table(m, p, 0, 0, 0, 0), std::invalid_argument);
}
