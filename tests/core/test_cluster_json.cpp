#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("cluster: inline GPU object", "[core][cluster]") {
  const ClusterSpec c = read_as(base_cluster(), read_cluster);
  CHECK(c.name == "test-superpod");
  CHECK(c.gpu.name == "a100-80gb");
  CHECK(c.total_gpus() == 1120);
  CHECK(c.intra.kind == "nvswitch");
  CHECK(c.inter.rail_optimized);
  CHECK(c.inter.tiers == 3);
  CHECK(c.profile == "megatron-a100");
}

TEST_CASE("cluster: gpu errors", "[core][cluster]") {
  json j = base_cluster();
  j["gpu"] = "no-such-gpu";
  require_input_error([&] { read_as(j, read_cluster, "cluster.json"); }, "$.gpu",
                      {"cluster.json", "unknown gpus preset \"no-such-gpu\"; known:"});
  j["gpu"] = "./gpus/mine.json";  // names only, never paths
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpu", {"unknown gpus preset"});
  j["gpu"] = 42;
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpu",
                      {"must be a GPU preset name or a GPU object (got number)"});
  j = base_cluster();
  j["gpu"]["hbm_bytes"] = -1;
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpu.hbm_bytes",
                      {"must be >= 0 (got -1)"});
}

TEST_CASE("cluster: sizes", "[core][cluster]") {
  json j = base_cluster();
  j["gpus_per_node"] = 2048;
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpus_per_node", {"<= 1024 (got 2048)"});
  j = base_cluster();
  j["nodes"] = 5000000;
  j["gpus_per_node"] = 8;
  require_input_error([&] { read_as(j, read_cluster); }, "$.nodes",
                      {"nodes (5000000) * gpus_per_node (8) = 40000000 must be <= 10000000"});
  j = base_cluster();
  j["nodes"] = 0;
  require_input_error([&] { read_as(j, read_cluster); }, "$.nodes", {">= 1 (got 0)"});
}

TEST_CASE("cluster: GPUs per host divide the node", "[core][cluster]") {
  json j = base_cluster();
  j["gpus_per_node"] = 72;
  j["gpus_per_host"] = 5;
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpus_per_host",
                      {"must divide gpus_per_node (72) (got 5)"});
  j["gpus_per_host"] = 96;
  require_input_error([&] { read_as(j, read_cluster); }, "$.gpus_per_host", {"<= 72"});
  j["gpus_per_host"] = 4;
  const ClusterSpec c = read_as(j, read_cluster);
  CHECK(c.host_gpus() == 4);
  CHECK(read_as(to_json(c), read_cluster).gpus_per_host == 4);
  CHECK(read_as(base_cluster(), read_cluster).host_gpus() == read_as(base_cluster(), read_cluster).gpus_per_node);
}

TEST_CASE("cluster: intra-node fabric", "[core][cluster]") {
  json j = base_cluster();
  j["intra_node"]["kind"] = "nvlink";
  require_input_error([&] { read_as(j, read_cluster); }, "$.intra_node.kind",
                      {"\"nvswitch\", \"nvlink-mesh\", \"pcie\", \"shared-memory\"", "got \"nvlink\""});
  j = base_cluster();
  j["intra_node"]["latency_s"] = 5;  // microseconds given as seconds
  require_input_error([&] { read_as(j, read_cluster); }, "$.intra_node.latency_s",
                      {"must be < 1 second (got 5)"});
  j = base_cluster();
  j["intra_node"]["allreduce_busbw_bytes_per_s"] = 0;
  require_input_error([&] { read_as(j, read_cluster); }, "$.intra_node.allreduce_busbw_bytes_per_s",
                      {"> 0"});
}

TEST_CASE("cluster: inter-node network", "[core][cluster]") {
  json j = base_cluster();
  j["inter_node"]["nic_effective_bandwidth_bytes_per_s"] = 30e9;
  require_input_error([&] { read_as(j, read_cluster); },
                      "$.inter_node.nic_effective_bandwidth_bytes_per_s",
                      {"must be <= nic_bandwidth_bytes_per_s (25000000000) (got 30000000000)"});
  j = base_cluster();
  j["inter_node"]["tiers"] = 5;
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.tiers", {"<= 4 (got 5)"});
  j = base_cluster();
  j["inter_node"]["switch_radix"] = 1;
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.switch_radix",
                      {">= 2 (got 1)"});
  j = base_cluster();
  j["inter_node"]["oversubscription"] = 0.5;
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.oversubscription",
                      {">= 1 (got 0.5)"});
  j["inter_node"]["oversubscription"] = 100;
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.oversubscription",
                      {"<= 64 (got 100)"});
  j = base_cluster();
  j["inter_node"]["rail_optimized"] = "yes";
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.rail_optimized",
                      {"must be a boolean (got string)"});
  j = base_cluster();
  j["inter_node"]["kind"] = "";
  require_input_error([&] { read_as(j, read_cluster); }, "$.inter_node.kind",
                      {"must not be empty"});
}

TEST_CASE("cluster: profile is required", "[core][cluster]") {
  json j = base_cluster();
  j.erase("profile");
  require_input_error([&] { read_as(j, read_cluster); }, "$.profile", {"is required"});
}

TEST_CASE("cluster: write then read round trips", "[core][cluster][roundtrip]") {
  json j = base_cluster();
  j["intra_node"]["latency_s"] = 0.1 + 0.2;  // not exactly representable in short decimal
  const ClusterSpec c = read_as(j, read_cluster);
  const json out = to_json(c);
  CHECK(out["gpu"].is_object());
  const ClusterSpec back = read_as(parse_json_text(out.dump(), "c.json"), read_cluster);
  CHECK(to_json(back) == out);
  CHECK(back.intra.latency_s == c.intra.latency_s);
  CHECK(back.inter.nic_effective_bandwidth_bytes_per_s ==
        c.inter.nic_effective_bandwidth_bytes_per_s);
  CHECK(back.inter.oversubscription == c.inter.oversubscription);
  CHECK(back.gpu.peak_flops_per_s == c.gpu.peak_flops_per_s);
  CHECK(back.nodes == c.nodes);
  CHECK(back.gpus_per_node == c.gpus_per_node);
  CHECK(back.profile == c.profile);
  // Reading the base document and writing it back gives the same JSON (every field written).
  CHECK(out == j);
}

}  // namespace parallax::test
