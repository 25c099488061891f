// The fat tree built from the presets, counted by hand from their numbers.
#include <catch2/catch.hpp>

#include <map>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/topologies/cluster_graph.hpp"

using namespace parallax;

namespace {

std::map<VertexKind, int64_t> count_vertices(const ClusterGraph& g) {
  std::map<VertexKind, int64_t> n;
  for (auto v : boost::make_iterator_range(boost::vertices(g.graph()))) ++n[g.graph()[v].kind];
  return n;
}

std::vector<int32_t> route(const ClusterGraph& g, int64_t a, int64_t b) {
  std::vector<int32_t> r;
  g.route(a, b, r);
  return r;
}

}  // namespace

TEST_CASE("dgx-a100-superpod: 28 scalable units of 20 nodes, 8 rail leaves each, 3 tiers") {
  const ClusterGraph g(load_cluster("dgx-a100-superpod"));
  auto n = count_vertices(g);
  CHECK(n[VertexKind::gpu] == 4480);
  CHECK(n[VertexKind::nvswitch] == 560);
  CHECK(n[VertexKind::nic] == 4480);
  // Radix 40, oversubscription 1: 20 NIC ports per leaf -> 560 / 20 = 28 units x 8 rails.
  CHECK(n[VertexKind::leaf] == 224);
  // Spine blocks of 40/2 = 20 leaves: ceil(224 / 20) = 12; one core block.
  CHECK(n[VertexKind::spine] == 12);
  CHECK(n[VertexKind::core] == 1);
  // Directed links: per node 8 GPU-NVSwitch + 8 GPU-NIC, both ways = 32; NIC-leaf 2 x 4480;
  // leaf-spine 2 x 224; spine-core 2 x 12.
  CHECK(g.link_count() == 560 * 32 + 2 * 4480 + 2 * 224 + 2 * 12);
  CHECK(static_cast<int64_t>(boost::num_edges(g.graph())) == g.link_count());
}

TEST_CASE("routes: NVSwitch inside a node, leaf within a unit, spine across units, core across pods") {
  const ClusterGraph g(load_cluster("dgx-a100-superpod"));
  CHECK(route(g, 0, 7).size() == 2);     // GPU-NVSwitch-GPU
  CHECK(route(g, 0, 8).size() == 4);     // GPU-NIC-leaf-NIC-GPU (node 1, same unit and rail)
  CHECK(route(g, 0, 160).size() == 6);   // node 20: next unit, same rail's spine block
  CHECK(route(g, 0, 3200).size() == 8);  // node 400: unit 20 of rail 0 is in the second block
  CHECK(g.leaf_of(0) == g.leaf_of(8));
  // Vertices: 17 per node (8 GPUs, the NVSwitch, 8 NICs) in node order, then leaves, spines, core.
  CHECK(g.vertex_name(8 * 17 + 3) == "node8/GPU3");
  CHECK(g.vertex_name(8 * 17 + 9) == "node8/NIC0");
  CHECK(g.vertex_name(560 * 17) == "leaf0");
  CHECK(g.vertex_name(560 * 17 + 224 + 12) == "core");
  CHECK(g.leaf_of(0) != g.leaf_of(1));  // rail 1
  // Effective bandwidths: NVLink 300 GB/s x 230/300; NIC 25 GB/s x 24/25.
  const auto r = route(g, 0, 8);
  CHECK(g.link_bandwidth(route(g, 0, 1).front()) == Approx(230e9));
  CHECK(g.link_bandwidth(r[1]) == Approx(24e9));
  double lat = 0;
  for (int32_t id : r) lat += g.link_latency(id);
  CHECK(lat == Approx(5e-6));
}

TEST_CASE("not rail-optimised: NICs fill leaves in node order") {
  const ClusterGraph g(load_cluster("azure-ndv4"));
  // 512 nodes x 8 NICs over 20-port leaves: ceil(4096 / 20) = 205 leaves.
  CHECK(count_vertices(g)[VertexKind::leaf] == 205);
  CHECK(g.leaf_of(0) == g.leaf_of(7));    // NICs 0-7 of node 0 on leaf 0
  CHECK(g.leaf_of(16) == g.leaf_of(19));  // node 2's NICs 0-3 = ports 16-19 of leaf 0
  CHECK(g.leaf_of(20) != g.leaf_of(19));  // port 20 starts leaf 1
}

TEST_CASE("a tree too small for the nodes is an input error") {
  ClusterSpec c = load_cluster("dgx-h100-superpod");
  c.nodes = 4000;  // 4000 / 32 = 125 units x 8 rails = 1000 leaves > 64 for two tiers
  CHECK_THROWS_AS(ClusterGraph(c), InputError);
}
