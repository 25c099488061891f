// The executor's size table against the memory model (costmodel/memory): per pipeline rank, the
// transformer-layer family and the total parameter count must agree; and the shards of every
// tensor over the TP ranks cover the global tensor exactly once.
#include <catch2/catch.hpp>

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

}  // namespace

TEST_CASE("size table agrees with the memory model per family and in total", "[executor]") {
  for (const auto& m : {tiny(Activation::gelu, Norm::layernorm, true),
                        tiny(Activation::swiglu, Norm::rmsnorm, false)}) {
    for (auto [tp, pp, vpp] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {2, 2, 1}, {2, 2, 2}, {4, 4, 1}}) {
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

TEST_CASE("TP shards cover every global element exactly once", "[executor]") {
  const ModelSpec m = tiny(Activation::swiglu, Norm::layernorm, true);
  PlanSpec p;
  p.tp = 4;
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
