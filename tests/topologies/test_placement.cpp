// Placement by order string, checked against the formula rank = tp_i + tp (dp_i + dp pp_i).
#include <catch2/catch.hpp>

#include <set>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/topologies/topology.hpp"
#include "spec_builders.hpp"

using namespace parallax;

TEST_CASE("tp=8, pp=4, dp=2 with tp-dp-pp: every group listed, TP inside nodes") {
  const Placement pl(8, 1, 2, 4, "tp-dp-pp");
  REQUIRE(pl.world_size() == 64);
  const auto tp = pl.groups(ParallelDim::tp);
  const auto dp = pl.groups(ParallelDim::dp);
  const auto pp = pl.groups(ParallelDim::pp);
  REQUIRE(tp.size() == 8);
  REQUIRE(dp.size() == 32);
  REQUIRE(pp.size() == 16);
  // TP group i = ranks 8i .. 8i+7 = the GPUs of node i.
  for (size_t i = 0; i < tp.size(); ++i) {
    const auto first = static_cast<int64_t>(8 * i);
    CHECK(tp[i] == std::vector<int64_t>{first, first + 1, first + 2, first + 3, first + 4, first + 5, first + 6, first + 7});
  }
  // DP group of (tp_i, pp_i) = {tp_i + 16 pp_i, tp_i + 16 pp_i + 8}.
  CHECK(dp[0] == std::vector<int64_t>{0, 8});
  CHECK(dp[7] == std::vector<int64_t>{7, 15});
  CHECK(dp[8] == std::vector<int64_t>{16, 24});
  CHECK(dp[31] == std::vector<int64_t>{55, 63});
  // Pipeline of (tp_i, dp_i) = {tp_i + 8 dp_i + 16 k}.
  CHECK(pp[0] == std::vector<int64_t>{0, 16, 32, 48});
  CHECK(pp[9] == std::vector<int64_t>{9, 25, 41, 57});  // pipeline i starts at rank i
  CHECK(pp[15] == std::vector<int64_t>{15, 31, 47, 63});
  for (const auto* groups : {&tp, &dp, &pp}) {
    std::set<int64_t> seen;
    for (const auto& g : *groups)
      for (int64_t r : g) CHECK(seen.insert(r).second);  // each rank exactly once
    CHECK(seen.size() == 64);
  }
  const RankCoords c = pl.coords(45);  // 45 = 5 + 8 * (1 + 2 * 2)
  CHECK(c.tp == 5);
  CHECK(c.dp == 1);
  CHECK(c.pp == 2);
  CHECK(pl.rank(c) == 45);
}

TEST_CASE("dp-tp-pp pushes a tp=8 group over 2 nodes, 4 GPUs on each") {
  const Placement pl(8, 1, 2, 4, "dp-tp-pp");
  CHECK(pl.group_of(ParallelDim::tp, 0) == std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14});
  const Topology t(load_cluster("dgx-a100-superpod"));
  PlanSpec p = test::PlanBuilder(8, 4, 2).order("dp-tp-pp");
  const PlanComm& pc = t.plan_comm(p);
  CHECK(pc.tp_crosses_nodes);
  REQUIRE(pc.tp_by_stage[0].size() == 1);
  CHECK(pc.tp_by_stage[0][0].nodes == 2);
  CHECK(pc.tp_by_stage[0][0].per_node == 4);
  p.order = "tp-dp-pp";
  CHECK_FALSE(t.plan_comm(p).tp_crosses_nodes);
}

TEST_CASE("cp may be named in the order; bad orders are input errors") {
  const Placement pl(2, 1, 2, 2, "tp-cp-dp-pp");
  CHECK(pl.group_of(ParallelDim::dp, 1) == std::vector<int64_t>{1, 3});
  CHECK_THROWS_AS(Placement(2, 1, 2, 2, "tp-dp"), InputError);
  CHECK_THROWS_AS(Placement(2, 1, 2, 2, "tp-dp-pp-tp"), InputError);
  CHECK_THROWS_AS(Placement(2, 1, 2, 2, "tp-ep-dp-pp"), InputError);
}

TEST_CASE("a plan larger than the cluster is an input error") {
  const Topology t(load_cluster("v100-dgx2h"));  // 512 GPUs
  const PlanSpec p = test::PlanBuilder(16, 1, 64);
  CHECK_THROWS_AS(t.plan_comm(p), InputError);
}

TEST_CASE("cp left out of the order sits right after tp (Megatron-Core's tp-cp-dp-pp)") {
  // tp 2, cp 2, dp 2, pp 2: "tp-dp-pp" places as "tp-cp-dp-pp", rank = tp + 2 (cp + 2 (dp + 2 pp)).
  const Placement pl(2, 2, 2, 2, "tp-dp-pp");
  CHECK(pl.order() == "tp-cp-dp-pp");
  CHECK(pl.group_of(ParallelDim::cp, 0) == std::vector<int64_t>{0, 2});
  CHECK(pl.group_of(ParallelDim::dp, 0) == std::vector<int64_t>{0, 4});
  CHECK(pl.group_of(ParallelDim::pp, 1) == std::vector<int64_t>{1, 9});
  // Gradients reduce over dp x cp: the ranks sharing tp and pp coordinates, cp fastest.
  CHECK(pl.group_of({ParallelDim::cp, ParallelDim::dp}, 1) == std::vector<int64_t>{1, 3, 5, 7});
  CHECK(pl.groups({ParallelDim::cp, ParallelDim::dp}).size() == 4);  // tp 2 x pp 2
  CHECK(placement_order("dp-tp-pp", 2) == "dp-tp-cp-pp");
  CHECK(placement_order("tp-dp-pp", 1) == "tp-dp-pp");
  // Named elsewhere, it stays there: cp outermost but for pp.
  const Placement outer(2, 2, 2, 1, "tp-dp-cp-pp");
  CHECK(outer.group_of(ParallelDim::cp, 0) == std::vector<int64_t>{0, 4});
}

TEST_CASE("the cp ring inside a node, and across nodes when tp fills the node") {
  const Topology t(load_cluster("dgx-h100-superpod"));
  // tp 4 x cp 2 on one 8-GPU node: the ring's sends stay on NVLink.
  const PlanComm& in = t.plan_comm(test::PlanBuilder(4, 1, 1).cp(2));
  REQUIRE(in.cp_ring_by_stage.size() == 1);
  for (const P2pCost& c : in.cp_ring_by_stage[0]) CHECK_FALSE(c.crosses_nodes);
  // tp 8 fills the node: cp 2's partner is on the next node.
  const PlanComm& out = t.plan_comm(test::PlanBuilder(8, 1, 1).cp(2));
  REQUIRE_FALSE(out.cp_ring_by_stage[0].empty());
  for (const P2pCost& c : out.cp_ring_by_stage[0]) CHECK(c.crosses_nodes);
  CHECK(out.dp_by_stage[0][0].size == 2);  // dp 1 x cp 2 reduce gradients together
}
