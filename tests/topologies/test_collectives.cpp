// Collective and p2p times on the cluster graph against hand calculations from the presets'
// numbers (presets/clusters/*.json): dgx-a100-superpod has NVLink 300 GB/s of which p2p reaches
// 230 GB/s, all-reduce busbw 230 GB/s, 8 HDR NICs of 25 GB/s line rate and 24 GB/s effective,
// one per GPU on rails, 40-port switches, 3.4 us per NVLink step and 5 us per network step.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/topologies/topology.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

std::vector<int64_t> range(int64_t first, int64_t count, int64_t stride = 1) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}

PlanSpec plan(int64_t tp, int64_t dp, int64_t pp, std::string order = "tp-dp-pp") {
  return test::PlanBuilder(tp, pp, dp).order(order);
}

constexpr double kIntraLat = 3.4e-6;
constexpr double kInterLat = 5e-6;

}  // namespace

TEST_CASE("ring all-reduce on the 8 GPUs of one DGX A100 node") {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const GroupCost g = t.group_cost(range(0, 8));
  CHECK(g.nodes == 1);
  const double S = 1e9;
  // 2(n-1) = 14 steps of 3.4 us, and 2(n-1)/n * S over the 230 GB/s ring.
  const double expected = 14 * kIntraLat + 2 * 7.0 / 8 * S / 230e9;
  CHECK(collective_time_s(g, Collective::all_reduce, S) == Approx(expected).epsilon(1e-9));
  // busbw of 1 GB = (S / t) * 1.75: 228.6 GB/s, the ~230 GB/s anchor.
  const double busbw = S / expected * 1.75;
  CHECK(busbw == Approx(228.6e9).epsilon(1e-3));
  CHECK(collective_time_s(g, Collective::all_gather, S) ==
        Approx(7 * kIntraLat + 7.0 / 8 * S / 230e9).epsilon(1e-9));
  CHECK(collective_time_s(g, Collective::broadcast, S) == Approx(7 * kIntraLat + S / 230e9).epsilon(1e-9));
}

TEST_CASE("the H100 and DGX-2H nodes reach their anchors") {
  const Topology h(load_cluster("dgx-h100-superpod"));
  const double S = 8e9;
  const double t_h = collective_time_s(h.group_cost(range(0, 8)), Collective::all_reduce, S);
  CHECK(t_h == Approx(14 * kIntraLat + 1.75 * S / 370e9).epsilon(1e-9));
  // DGX-2H: links reach p2p 130 GB/s, a full-node ring 120/130 of that = 120 GB/s busbw.
  const Topology v(load_cluster("v100-dgx2h"));
  const double t_v = collective_time_s(v.group_cost(range(0, 16)), Collective::all_reduce, S);
  CHECK(t_v == Approx(30 * kIntraLat + 2 * 15.0 / 16 * S / 120e9).epsilon(1e-9));
}

TEST_CASE("hierarchical all-reduce over 2 nodes x 8 GPUs") {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const GroupCost g = t.group_cost(range(0, 16));
  CHECK(g.nodes == 2);
  CHECK(g.per_node == 8);
  const double S = 1e9;
  // Intra-node reduce-scatter + all-gather over NVSwitch, then 8 rings of 2 nodes (one per
  // rail, each GPU on its own 24 GB/s NIC) on S/8 each: 2 steps, factor 2(2-1)/2 = 1. As NCCL
  // counts a ring through all 16 GPUs: 2 x 15 steps, 2 x (2 - 1) across the network and the
  // other 28 over NVLink.
  const double intra = 28 * kIntraLat + 1.75 * S / 230e9;
  const double inter = 2 * kInterLat + 1.0 * (S / 8) / 24e9;
  CHECK(collective_time_s(g, Collective::all_reduce, S, Algorithm::ring) == Approx(intra + inter).epsilon(1e-9));
  // Tree on 2 nodes: 2 steps, 2 * S/8 on the wire: slower, so automatic takes the ring.
  CHECK(collective_time_s(g, Collective::all_reduce, S) == Approx(intra + inter).epsilon(1e-9));
}

TEST_CASE("a DP group of 16 nodes: 8 concurrent groups share 8 rails, or 4 NICs") {
  const double S = 4e9;
  // tp = 8, dp = 16: DP group j is GPU j of nodes 0..15; all 8 run at once, one per rail.
  const Topology t(load_cluster("dgx-a100-superpod"));
  const PlanComm& pc = t.plan_comm(plan(8, 16, 1));
  REQUIRE(pc.dp_by_stage.size() == 1);
  REQUIRE(pc.dp_by_stage[0].size() == 1);  // all 8 groups cost the same
  const GroupCost& g = pc.dp_by_stage[0][0];
  CHECK(g.nodes == 16);
  CHECK(g.per_node == 1);
  CHECK(collective_time_s(g, Collective::all_reduce, S) ==
        Approx(30 * kInterLat + 2 * 15.0 / 16 * S / 24e9).epsilon(1e-9));
  // The same cluster with 4 NICs per node: GPUs 2i and 2i+1 share NIC i, so two rings share
  // each NIC: 12 GB/s each.
  ClusterSpec c4 = load_cluster("dgx-a100-superpod");
  c4.inter.nics_per_node = 4;
  const Topology t4(c4);
  const GroupCost& g4 = t4.plan_comm(plan(8, 16, 1)).dp_by_stage[0].front();
  CHECK(collective_time_s(g4, Collective::all_reduce, S) ==
        Approx(30 * kInterLat + 2 * 15.0 / 16 * S / 12e9).epsilon(1e-9));
  // A group alone gets its NIC to itself.
  const GroupCost alone = t4.group_cost(range(0, 16, 8));
  CHECK(collective_time_s(alone, Collective::all_reduce, S) ==
        Approx(30 * kInterLat + 2 * 15.0 / 16 * S / 24e9).epsilon(1e-9));
}

TEST_CASE("small messages across nodes take the double binary tree") {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const GroupCost g = t.group_cost(range(0, 16, 8));  // one GPU on each of 16 nodes
  const double S = 1e5;
  const double ring = 30 * kInterLat + 2 * 15.0 / 16 * S / 24e9;
  const double tree = 2 * 4 * kInterLat + 2 * S / 24e9;  // 2 ceil(log2 16) steps
  REQUIRE(tree < ring);
  CHECK(collective_time_s(g, Collective::all_reduce, S) == Approx(tree).epsilon(1e-9));
  CHECK(collective_time_s(g, Collective::all_reduce, S, Algorithm::ring) == Approx(ring).epsilon(1e-9));
}

TEST_CASE("p2p within and across nodes") {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const double S = 1e8;
  CHECK(p2p_time_s(t.p2p_cost(0, 1), S) == Approx(kIntraLat + S / 230e9).epsilon(1e-9));
  CHECK(p2p_time_s(t.p2p_cost(0, 8), S) == Approx(kInterLat + S / 24e9).epsilon(1e-9));
  // Across scalable units (node 0 to node 20): through the spine, same NIC-bound time.
  CHECK(p2p_time_s(t.p2p_cost(0, 160), S) == Approx(kInterLat + S / 24e9).epsilon(1e-9));
}

TEST_CASE("oversubscription divides the leaf uplink among the flows crossing it") {
  // Oversubscription 3: a leaf keeps floor(40 * 3/4) = 30 ports for NICs (30-node scalable units)
  // and 30 * 24 / 3 = 240 GB/s of uplink. tp 8, dp 30, pp 2: stage 0 fills unit 0, stage 1 unit
  // 1, so the 30 transfers of each rail cross one leaf uplink: 8 GB/s each.
  ClusterSpec c = load_cluster("dgx-a100-superpod");
  c.inter.oversubscription = 3;
  const Topology t(c);
  const PlanComm& pc = t.plan_comm(plan(8, 30, 2));
  const double S = 1e8;
  CHECK(max_p2p_time_s(pc.p2p, S) == Approx(kInterLat + S / 8e9).epsilon(1e-9));
  const Topology full(load_cluster("dgx-a100-superpod"));
  CHECK(max_p2p_time_s(full.plan_comm(plan(8, 30, 2)).p2p, S) == Approx(kInterLat + S / 24e9).epsilon(1e-9));
}

TEST_CASE("busbw factors follow nccl-tests") {
  CHECK(busbw_factor(Collective::all_reduce, 8) == Approx(1.75));
  CHECK(busbw_factor(Collective::all_gather, 8) == Approx(0.875));
  CHECK(busbw_factor(Collective::reduce_scatter, 4) == Approx(0.75));
  CHECK(busbw_factor(Collective::broadcast, 8) == Approx(1));
  CHECK(busbw_factor(Collective::send_recv, 2) == Approx(1));
}

TEST_CASE("the tree is for all-reduce only") {
  const Topology t(load_cluster("dgx-a100-superpod"));
  const GroupCost g = t.group_cost(range(0, 16));
  CHECK_THROWS_AS(collective_time_s(g, Collective::all_gather, 1e6, Algorithm::tree), InputError);
}

TEST_CASE("an uneven group (6 GPUs as 2 + 4 on two nodes) has a finite hierarchical time") {
  // tp = 6 on 8-GPU nodes puts TP group 1 on GPUs 6-11: 2 on node 0, 4 on node 1. Only local
  // slots 0 and 1 exist on both nodes, so only they run inter-node rings (regression: a slot on
  // one node alone used to count as a zero-bandwidth ring and made the time infinite).
  const Topology t(load_cluster("dgx-a100-superpod"));
  const GroupCost g = t.group_cost(range(6, 6));
  CHECK(g.nodes == 2);
  CHECK(g.per_node == 4);
  const double S = 1e9;
  // Intra: ring over k = 4, 2(k-1)/k = 1.5 of S at 230 GB/s; inter: 2 nodes on S/4 over one
  // 24 GB/s NIC per GPU, factor 2(2-1)/2 = 1. Latencies are microseconds against milliseconds.
  const double expected = 1.5 * S / 230e9 + (S / 4) / 24e9;
  const double got = collective_time_s(g, Collective::all_reduce, S, Algorithm::ring);
  CHECK(std::isfinite(got));
  CHECK(got == Approx(expected).epsilon(0.005));
}
