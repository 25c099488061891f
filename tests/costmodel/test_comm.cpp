// Two-tier collective and p2p times against hand calculations with the preset's numbers.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/comm.hpp"

using namespace parallax;

TEST_CASE("ring all-reduce on the 8 GPUs of one DGX A100 node") {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const double S = 1e9;
  const double t = collective_time_s(c, Collective::all_reduce, GroupSpan{8, 1, 8}, S);
  // 2(n-1) latency steps + 2(n-1)/n * S / busbw
  const double expected = 14 * c.intra.latency_s + 2 * 7.0 / 8 * S / 230e9;
  CHECK(t == Approx(expected).epsilon(1e-12));
  CHECK(c.intra.allreduce_busbw_bytes_per_s == 230e9);
}

TEST_CASE("hierarchical all-reduce over 2 nodes x 8 GPUs") {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const double S = 1e9;
  const double t = collective_time_s(c, Collective::all_reduce, GroupSpan{16, 2, 8}, S);
  // intra-node RS + AG (2(k-1)/k S over NVSwitch busbw) and inter-node AR of S/k per GPU over its
  // own 24 GB/s HDR NIC (8 NICs for 8 GPUs).
  const double intra = 14 * c.intra.latency_s + 2 * 7.0 / 8 * S / 230e9;
  const double inter = 2 * c.inter.latency_s + 2 * 1.0 / 2 * (S / 8) / 24e9;
  CHECK(t == Approx(intra + inter).epsilon(1e-12));
}

TEST_CASE("a DP group with one GPU per node gets one rail") {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const double S = 4e9;
  const double t = collective_time_s(c, Collective::all_reduce, GroupSpan{16, 16, 1}, S);
  CHECK(t == Approx(30 * c.inter.latency_s + 2 * 15.0 / 16 * S / 24e9).epsilon(1e-12));
}

TEST_CASE("p2p within and across nodes") {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  CHECK(p2p_time_s(c, false, 1e8) == Approx(c.intra.latency_s + 1e8 / 230e9));
  CHECK(p2p_time_s(c, true, 1e8) == Approx(c.inter.latency_s + 1e8 / 24e9));
}

TEST_CASE("placement spans: TP innermost stays in a node; DP and PP cross nodes") {
  PlanSpec p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 2;
  PlanSpans s = plan_spans(p, 8);
  CHECK(s.tp.nodes == 1);
  CHECK(s.dp.nodes == 2);
  CHECK(s.dp.per_node == 1);
  CHECK(s.pp_crosses_nodes);
  p.order = "dp-tp-pp";  // DP innermost: TP members are 2 apart, 4 per node, 2 nodes
  s = plan_spans(p, 8);
  CHECK(s.tp.nodes == 2);
  CHECK(s.tp.per_node == 4);
  CHECK(s.dp.nodes == 1);
}

TEST_CASE("busbw factors follow nccl-tests") {
  CHECK(busbw_factor(Collective::all_reduce, 8) == Approx(1.75));
  CHECK(busbw_factor(Collective::all_gather, 8) == Approx(0.875));
  CHECK(busbw_factor(Collective::reduce_scatter, 4) == Approx(0.75));
  CHECK(busbw_factor(Collective::send_recv, 2) == Approx(1));
}
