// Node descriptions imported from an NCCL topology dump and from `nvidia-smi topo -m` (samples in
// tests/data, a DGX A100: 8 GPUs x 12 NVLinks to NVSwitches, 8 HDR NICs, GPU i next to mlx5_i).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "parallax/core/presets.hpp"
#include "parallax/topologies/import.hpp"
#include "parallax/topologies/topology.hpp"

using namespace parallax;

namespace {

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_dgx_a100(const NodeDescription& d) {
  REQUIRE(d.gpu_vertices().size() == 8);
  REQUIRE(d.nic_vertices().size() == 8);
  CHECK(d.gpu_nic == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  int switches = 0;
  for (const NodeVertex& v : d.vertices) switches += v.kind == VertexKind::nvswitch;
  CHECK(switches == 1);
  for (const NodeLink& l : d.links) {
    const bool nic = d.vertices[static_cast<size_t>(l.to)].kind == VertexKind::nic;
    // 12 NVLinks x 25 GB/s; HDR 200 Gb/s = 25 GB/s.
    CHECK(l.bandwidth_bytes_per_s == Approx(nic ? 25e9 : 300e9));
  }
}


// An all-reduce of 1 GB over the first `ranks` GPUs costs on the cluster with the imported node
// what it costs on the preset's own node.
void check_costs_as_preset(const ClusterSpec& c, const NodeDescription& d, int64_t ranks) {
  const Topology imported(c, d);
  const Topology preset(c);
  std::vector<int64_t> g;
  for (int64_t i = 0; i < ranks; ++i) g.push_back(i);
  CHECK(collective_time_s(imported.group_cost(g), Collective::all_reduce, 1e9) ==
        Approx(collective_time_s(preset.group_cost(g), Collective::all_reduce, 1e9)).epsilon(1e-12));
}

}  // namespace

TEST_CASE("NCCL topology dump of a DGX A100") {
  const NodeDescription d = import_nccl_topology_xml(read_data("dgx-a100-nccl-topo.xml"), "dgx-a100-nccl-topo.xml");
  check_dgx_a100(d);
  CHECK(d.vertices[8].name == "mlx5_0");
}

TEST_CASE("nvidia-smi topo -m of a DGX A100") {
  const NodeDescription d = import_nvidia_smi_topo(read_data("dgx-a100-nvidia-smi-topo.txt"), "smi.txt");
  check_dgx_a100(d);
}

TEST_CASE("an imported node in the superpod costs what the preset's node costs") {
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const NodeDescription d = import_nccl_topology_xml(read_data("dgx-a100-nccl-topo.xml"), "x");
  check_costs_as_preset(c, d, 32);
}

TEST_CASE("an NVLink mesh without NVSwitch becomes direct links plus PCIe") {
  const std::string smi =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV2\tNV1\tSYS\tPIX\t0-19\t0\n"
      "GPU1\tNV2\t X \tSYS\tNV1\tPIX\t0-19\t0\n"
      "GPU2\tNV1\tSYS\t X \tNV2\tSYS\t20-39\t1\n"
      "GPU3\tSYS\tNV1\tNV2\t X \tSYS\t20-39\t1\n"
      "NIC0\tPIX\tPIX\tSYS\tSYS\t X \n";
  const NodeDescription d = import_nvidia_smi_topo(smi, "mesh");
  int nvlinks = 0;
  for (const NodeLink& l : d.links) nvlinks += l.kind == LinkKind::nvlink;
  CHECK(nvlinks == 4);  // 0-1, 0-2, 1-3, 2-3
  CHECK(d.gpu_nic == std::vector<int64_t>{0, 0, 0, 0});
}

// ---- nvidia-smi without NIC columns (tab-separated, as the driver prints it) ---------------------

TEST_CASE("nvidia-smi topo -m with GPUs only (no NIC driver, cloud VM): the cluster's NICs are used") {
  // tests/data/a100-vm-gpus-only-nvidia-smi-topo.txt: 8 A100 on NVSwitch (NV12), tab-separated,
  // no NIC column or NIC legend.
  const std::string text = read_data("a100-vm-gpus-only-nvidia-smi-topo.txt");
  REQUIRE(text.find('\t') != std::string::npos);
  REQUIRE(text.find("NIC") == std::string::npos);
  const NodeDescription d = import_nvidia_smi_topo(text, "vm.txt");
  REQUIRE(d.gpu_vertices().size() == 8);
  CHECK(d.nic_vertices().empty());
  CHECK(d.gpu_nic.empty());
  for (const NodeLink& l : d.links) CHECK(l.bandwidth_bytes_per_s == Approx(12 * 25e9));  // NV12
  // Written and read back as a node description JSON (what `topo import` prints).
  const nlohmann::json j = to_json(d);
  JsonObjectReader r(j, "vm.json");
  CHECK(read_node_description(r).gpu_vertices().size() == 8);
  // In a cluster it gets the cluster's NICs and GPU-NIC rails, so a group spanning nodes costs
  // what it costs on the preset's node (same NVSwitch bandwidth, same NICs).
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  check_costs_as_preset(c, d, 16);
}

TEST_CASE("nvidia-smi topo -m with GPUs only on PCIe (4 x A10G, tab-separated)") {
  // An AWS g5.12xlarge-like VM: no NVLink, GPUs under host bridges (PHB) and across NUMA (SYS).
  const std::string smi =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tPHB\tPHB\tPHB\t0-47\t0\t\tN/A\n"
      "GPU1\tPHB\t X \tPHB\tPHB\t0-47\t0\t\tN/A\n"
      "GPU2\tPHB\tPHB\t X \tPHB\t0-47\t0\t\tN/A\n"
      "GPU3\tPHB\tPHB\tPHB\t X \t0-47\t0\t\tN/A\n"
      "\nLegend:\n\n  X    = Self\n  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n";
  const NodeDescription d = import_nvidia_smi_topo(smi, "g5.txt");
  REQUIRE(d.gpu_vertices().size() == 4);
  CHECK(d.nic_vertices().empty());
  int pcie = 0;
  for (const NodeLink& l : d.links) pcie += l.kind == LinkKind::pcie;
  CHECK(pcie == 4);  // each GPU to the shared PCIe vertex, 31.5 GB/s (PCIe Gen4 x16)
}

// ---- NCCL dumps of dual-port NICs -----------------------------------------------------------------

TEST_CASE("NCCL topology dump with dual-port NICs: one NIC per card, its ports' speeds summed") {
  // tests/data/dgx-a100-dual-port-nccl-topo.xml: the DGX A100 dump with each NIC a dual-port
  // card, two <net> (mlx5_2i, mlx5_2i+1, 200000 Mb/s each) under one <nic>: 16 ports, 8 cards.
  // NCCL fuses the ports of one <nic> into one virtual NIC by default (NCCL_NET_MERGE_LEVEL
  // defaults to PATH_PORT, src/graph/topo.cc ncclTopoGetFusionEnv) whose speed is the sum of
  // its ports' (src/transport/net_ib/init.cc ncclIbMakeVDeviceInternal), named "a+b".
  const NodeDescription d =
      import_nccl_topology_xml(read_data("dgx-a100-dual-port-nccl-topo.xml"), "dual.xml");
  REQUIRE(d.gpu_vertices().size() == 8);
  REQUIRE(d.nic_vertices().size() == 8);
  CHECK(d.vertices[8].name == "mlx5_0+mlx5_1");
  CHECK(d.gpu_nic == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  for (const NodeLink& l : d.links) {
    const bool nic = d.vertices[static_cast<size_t>(l.to)].kind == VertexKind::nic;
    CHECK(l.bandwidth_bytes_per_s == Approx(nic ? 2 * 200e9 / 8 : 300e9));  // 2 x 200 Gb/s
  }
  // The preset's cluster takes it: 8 NICs per node, as dgx-a100-superpod says.
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const Topology t(c, d);
  CHECK(t.graph().gpus() == c.total_gpus());
}
