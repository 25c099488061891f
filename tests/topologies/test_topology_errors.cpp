// Bad topology input: one-line InputErrors naming the field.
#include <catch2/catch.hpp>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/topologies/import.hpp"
#include "parallax/topologies/topology.hpp"

using namespace parallax;
using nlohmann::json;

namespace {

json two_gpu_node() {
  return json::parse(R"({
    "source": "test",
    "vertices": [{"name": "GPU0", "kind": "gpu"}, {"name": "GPU1", "kind": "gpu"},
                 {"name": "NVS", "kind": "nvswitch"}, {"name": "NIC0", "kind": "nic"}],
    "links": [{"from": "GPU0", "to": "NVS", "kind": "nvlink", "bandwidth_bytes_per_s": 3e11},
              {"from": "GPU1", "to": "NVS", "kind": "nvlink", "bandwidth_bytes_per_s": 3e11},
              {"from": "GPU0", "to": "NIC0", "kind": "pcie", "bandwidth_bytes_per_s": 2.5e10},
              {"from": "GPU1", "to": "NIC0", "kind": "pcie", "bandwidth_bytes_per_s": 2.5e10}],
    "gpu_nic": ["NIC0", "NIC0"]})");
}

// Runs f, expects an InputError at path whose rule contains text, on one line.
template <class F>
void expect_error(F f, const std::string& path, const std::string& text) {
  try {
    f();
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.path() == path);
    CHECK_THAT(e.rule(), Catch::Contains(text));
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

NodeDescription read(const json& j) {
  JsonObjectReader r(j, "node.json");
  return read_node_description(r);
}

}  // namespace

TEST_CASE("a valid node description reads and writes back") {
  const NodeDescription d = read(two_gpu_node());
  CHECK(d.links.size() == 4);
  const json back = to_json(d);
  CHECK(read(back).links.size() == 4);
}

TEST_CASE("unknown vertex") {
  json j = two_gpu_node();
  j["links"][1]["to"] = "NVS9";
  expect_error([&] { read(j); }, "$.links[1].to", "unknown vertex \"NVS9\"");
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:07:00.0\"><gpu dev=\"0\">"
      "<nvlink target=\"0000:99:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>"
      "<pci busid=\"0000:0c:00.0\"><nic><net name=\"mlx5_0\" speed=\"200000\"/></nic></pci></cpu></system>";
  expect_error([&] { import_nccl_topology_xml(xml, "t.xml"); }, "line 1: <nvlink target>", "unknown vertex");
}

TEST_CASE("zero bandwidth") {
  json j = two_gpu_node();
  j["links"][0]["bandwidth_bytes_per_s"] = 0;
  expect_error([&] { read(j); }, "$.links[0].bandwidth_bytes_per_s", "must be > 0");
  json c = to_json(load_cluster("dgx-a100-superpod"));
  c["inter_node"]["nic_effective_bandwidth_bytes_per_s"] = 0;
  expect_error([&] { JsonObjectReader r(c, "c.json"); read_cluster(r); },
               "$.inter_node.nic_effective_bandwidth_bytes_per_s", "must be > 0");
}

TEST_CASE("GPUs per node not matching") {
  const NodeDescription d = read(two_gpu_node());
  expect_error([&] { Topology t(load_cluster("dgx-a100-superpod"), d); }, "$.vertices",
               "GPUs per node do not match");
  json c = to_json(load_cluster("dgx-a100-superpod"));
  c["inter_node"]["gpu_nic"] = {0, 1, 2, 3};
  expect_error([&] { JsonObjectReader r(c, "c.json"); read_cluster(r); }, "$.inter_node.gpu_nic",
               "one NIC per GPU: gpus_per_node is 8");
}

TEST_CASE("a rank outside the cluster") {
  const Topology t(load_cluster("v100-dgx2h"));  // 512 GPUs
  expect_error([&] { t.group_cost({0, 512}); }, "--ranks", "rank 512 is outside cluster v100-dgx2h");
  expect_error([&] { t.p2p_cost(-1, 3); }, "--ranks", "outside");
}
