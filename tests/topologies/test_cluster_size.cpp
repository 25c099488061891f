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

TEST_CASE("a job on GB200 NVL72 racks takes them in SLURM segments that divide its hosts") {
  // A rack is 18 hosts of 4 GPUs. Megatron-Bridge's performance scripts (executors.py) give a job
  // of more than 18 hosts the largest segment <= 18 that divides its hosts: 64 hosts -> 16.
  const ClusterSpec c = load_cluster("gb200-nvl72");
  REQUIRE(c.gpus_per_node == 72);
  REQUIRE(c.host_gpus() == 4);
  CHECK(domain_segment_hosts(c, 256) == 16);  // 64 hosts: 16 divides 64, 17 and 18 do not
  CHECK(domain_segment_hosts(c, 80) == 10);   // 20 hosts: 10
  CHECK(domain_segment_hosts(c, 76) == 1);    // 19 hosts, a prime: one host per segment
  CHECK(domain_segment_hosts(c, 288) == 0);   // 72 hosts: four whole racks
  CHECK(domain_segment_hosts(c, 64) == 0);    // 16 hosts: inside one rack
  CHECK(domain_segment_hosts(load_cluster("dgx-h100-superpod"), 256) == 0);  // a domain is a host

  const ClusterSpec s = with_job_segments(c, 256, "test", "--gpus");
  CHECK(s.name == "gb200-nvl72 in segments of 16 hosts");
  CHECK(s.gpus_per_node == 64);
  CHECK(s.host_gpus() == 4);
  CHECK(s.inter.nics_per_node == 64);  // one NIC per GPU, as in the rack
  CHECK(s.total_gpus() >= 256);
  // Ranks 64..127 are the second segment: in another rack, not split across two as 72-GPU nodes
  // would put ranks 72..127.
  CHECK(with_job_segments(c, 288, "test", "--gpus").name == "gb200-nvl72");
  // More segments than the preset's 8 racks hold: 3040 GPUs are 760 = 2^3 x 5 x 19 hosts, whose
  // largest divisor under 18 is 10, so 76 segments of 40 GPUs, and the fabric grows to 76 nodes.
  const ClusterSpec big = with_job_segments(c, 3040, "test", "--gpus");
  CHECK(big.gpus_per_node == 40);
  CHECK(big.nodes == 76);
}
