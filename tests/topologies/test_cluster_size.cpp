// A preset cluster at another size (cluster_size.hpp), against the fat-tree arithmetic by hand.
#include <catch2/catch.hpp>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/topologies/cluster_size.hpp"

using namespace parallax;

TEST_CASE("a DGX H100 SuperPOD grows to 256 nodes on two tiers, to 8192 on three, no further") {
  // Radix-64 switches at 1:1: 32 ports down per leaf, so a rail leaf serves 32 nodes; 8 rails make
  // ceil(N / 32) * 8 leaves. Two tiers join 64 leaves (N <= 256); three tiers join 64 pods of 32
  // leaves, 2048 leaves (N <= 8192).
  const ClusterSpec c = load_cluster("dgx-h100-superpod");
  REQUIRE(c.inter.tiers == 2);
  const ResizedCluster a = with_nodes(c, 256, "test", "--nodes");
  CHECK(a.cluster.nodes == 256);
  CHECK(a.cluster.inter.tiers == 2);
  CHECK_FALSE(a.third_tier_added);
  const ResizedCluster b = with_nodes(c, 257, "test", "--nodes");
  CHECK(b.cluster.inter.tiers == 3);
  CHECK(b.third_tier_added);
  CHECK(with_nodes(c, 8192, "test", "--nodes").cluster.total_gpus() == 65536);
  CHECK_THROWS_AS(with_nodes(c, 8193, "test", "--nodes"), InputError);
  // Smaller than the preset: the same fabric, fewer nodes.
  CHECK(with_nodes(c, 4, "test", "--nodes").cluster.total_gpus() == 32);
}
