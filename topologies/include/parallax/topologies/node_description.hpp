#pragma once
// What one node looks like inside: its GPUs, switches (NVSwitch, PCIe) and NICs, and the links
// between them. A cluster repeats one node description on every node and wires the NICs to the
// network (cluster_graph.hpp). Built from the cluster spec by default, or imported from an NCCL
// topology dump / `nvidia-smi topo -m` (import.hpp), or read from JSON:
//
//   {"source": "...",
//    "vertices": [{"name": "GPU0", "kind": "gpu"}, {"name": "NVS", "kind": "nvswitch"}, ...],
//    "links": [{"from": "GPU0", "to": "NVS", "kind": "nvlink",
//               "bandwidth_bytes_per_s": 3e11, "latency_s": 1.7e-6}, ...],
//    "gpu_nic": ["NIC0", ...]}        ([] when the node lists no NIC: the cluster's are used)
//
// Links are bidirectional with the bandwidth per direction. Bandwidths are line rates (what the
// hardware is sold as); the cluster graph scales them by the cluster spec's effective fractions.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/json_reader.hpp"

namespace parallax {

enum class VertexKind { gpu, nvswitch, pcie, nic, leaf, spine, core };
enum class LinkKind { nvlink, pcie, network };

const char* to_string(VertexKind k);
const char* to_string(LinkKind k);

struct NodeVertex {
  std::string name;
  VertexKind kind = VertexKind::gpu;
};

struct NodeLink {
  int64_t from = 0;  // vertex indices
  int64_t to = 0;
  LinkKind kind = LinkKind::nvlink;
  double bandwidth_bytes_per_s = 0;  // line rate, per direction
  double latency_s = 0;              // per traversal
};

struct NodeDescription {
  std::string source;
  std::vector<NodeVertex> vertices;
  std::vector<NodeLink> links;  // each bidirectional
  std::vector<int64_t> gpu_nic;  // per GPU (in vertex order of the GPUs): index among the NICs

  std::vector<int64_t> gpu_vertices() const;
  std::vector<int64_t> nic_vertices() const;
};

// The node of a cluster spec: GPUs on one NVSwitch (or NVLink/PCIe fabric modelled as one switch),
// each GPU linked to its NIC (inter_node.gpu_nic or the usual wiring). NVLink latency is half the
// spec's per-step latency per link, so one GPU-switch-GPU step costs intra_node.latency_s.
NodeDescription default_node(const ClusterSpec& c);

// Strict reader (unknown keys, unknown vertex names, non-positive bandwidth: InputError).
NodeDescription read_node_description(JsonObjectReader& r);
NodeDescription load_node_description(const std::string& path);
nlohmann::json to_json(const NodeDescription& d);

// A node without NICs (nvidia-smi showed none) gets the cluster's NICs and GPU-NIC rails, as
// default_node wires them; a node with NICs is returned as is.
NodeDescription with_cluster_nics(NodeDescription d, const ClusterSpec& c);

// Throws InputError(source, ...) when the node does not fit the cluster (GPUs or NICs per node).
void check_node_fits(const NodeDescription& d, const ClusterSpec& c, const std::string& source);

}  // namespace parallax
