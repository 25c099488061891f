#pragma once
// The cluster as a Boost.Graph graph: on every node the vertices and links of its node
// description (GPUs, NVSwitch, NICs), and a fat tree of leaf, spine and core switches above the
// NICs. Every link is a pair of directed edges with an effective bandwidth per direction and a
// latency. Routes between GPUs are computed once (Boost BFS inside the node, up/down the tree
// between nodes) and served from tables, so a route costs a few array reads.
//
// Fat tree construction from inter_node (radix k, oversubscription o = down/up bandwidth):
//  - a leaf has floor(k o / (1 + o)) NIC-facing ports; its uplink bandwidth is that many ports'
//    bandwidth divided by o (k = 40, o = 1: 20 nodes per rail leaf, DGX SuperPOD's 20-node
//    scalable unit; k = 64: 32 nodes, the H100 SuperPOD's);
//  - rail-optimised: NIC r of the nodes of one scalable unit share leaf r of that unit; otherwise
//    NICs fill leaves in node order;
//  - tiers 2: one spine block joins all leaves (at most k); tiers >= 3: spine blocks (pods) of k/2
//    leaves (rail-optimised: leaves of the same rail together) joined by one core block. A block
//    stands for its parallel switches with ECMP spreading flows evenly, so its link to a leaf
//    carries the leaf's whole uplink bandwidth.
// Effective bandwidths: NVLink line rate x intra_node.p2p / nvlink_bandwidth; NIC and network
// line rate x nic_effective / nic_bandwidth. Latency: half of the per-step latency on each
// NVLink and on each NIC-leaf link, so one step costs intra_node / inter_node latency_s. A node
// description without latencies (an import) gets intra_node.latency_s spread over the links of a
// GPU-to-GPU route.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/topologies/node_description.hpp"

namespace parallax {

struct TopoVertex {
  VertexKind kind = VertexKind::gpu;
  int64_t node = -1;   // owning node, -1 for network switches
  int64_t index = 0;   // vertex of the node description, or the switch's index in its tier
};

struct TopoLink {
  int64_t id = 0;  // dense index of the directed link
  LinkKind kind = LinkKind::nvlink;
  double bandwidth_bytes_per_s = 0;  // effective, this direction
  double latency_s = 0;
};

// Edge list in a vector too (not Boost's default std::list): one allocation less per link.
using TopoGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                        TopoVertex, TopoLink, boost::no_property, boost::vecS>;

// Per switch tier: how many switches and their aggregate bandwidth toward the tier above.
struct TierSummary {
  std::string name;  // "leaf", "spine", "core"
  int64_t switches = 0;
  double down_bandwidth_bytes_per_s = 0;  // sum over links into the tier from below, one direction
  double up_bandwidth_bytes_per_s = 0;    // sum over links toward the tier above, one direction
};

class ClusterGraph {
 public:
  // Throws InputError when the node does not fit the cluster or the tree cannot hold the nodes.
  ClusterGraph(const ClusterSpec& c, const NodeDescription& node);
  explicit ClusterGraph(const ClusterSpec& c);

  const TopoGraph& graph() const { return g_; }
  const ClusterSpec& spec() const { return spec_; }
  int64_t gpus() const { return spec_.total_gpus(); }
  int64_t gpus_per_node() const { return spec_.gpus_per_node; }
  int64_t node_of(int64_t gpu) const { return gpu / spec_.gpus_per_node; }
  // The leaf switch a GPU's NIC hangs off (global leaf index).
  int64_t leaf_of(int64_t gpu) const;

  // "node12/GPU3", "leaf7", "spine0", "core" (built on demand: names are not stored per vertex).
  std::string vertex_name(int64_t v) const;

  int64_t link_count() const { return static_cast<int64_t>(bandwidth_.size()); }
  double link_bandwidth(int64_t id) const { return bandwidth_[static_cast<size_t>(id)]; }
  double link_latency(int64_t id) const { return latency_[static_cast<size_t>(id)]; }
  // Appends the directed link ids from GPU a to GPU b (a != b).
  void route(int64_t a, int64_t b, std::vector<int32_t>& out) const;
  // Fraction of a link's p2p rate a full-node ring collective reaches (all-reduce busbw / p2p).
  double intra_collective_efficiency() const { return intra_collective_efficiency_; }

  std::vector<TierSummary> tiers() const;

 private:
  void add_nodes(const NodeDescription& node);
  void add_fabric();
  int64_t add_link(int64_t u, int64_t v, LinkKind kind, double bw, double lat);

  ClusterSpec spec_;
  TopoGraph g_;
  std::vector<double> bandwidth_;  // by link id
  std::vector<double> latency_;
  double intra_collective_efficiency_ = 1;
  // Node template routes (link ids relative to the node's first link id).
  int64_t links_per_node_ = 0;
  std::vector<std::vector<int32_t>> local_route_;  // [a * G + b]
  std::vector<std::vector<int32_t>> gpu_to_nic_;   // [local gpu]
  std::vector<std::vector<int32_t>> nic_to_gpu_;   // [local gpu]
  std::vector<int64_t> gpu_nic_;                   // [local gpu] -> local NIC index
  std::vector<int64_t> nic_vertex_local_;          // [local NIC] -> template vertex
  std::vector<std::string> template_names_;
  int64_t vertices_per_node_ = 0;
  // Fabric tables, by global NIC (node * nics + nic), leaf and spine index.
  std::vector<int32_t> nic_leaf_;
  std::vector<int32_t> nic_up_, nic_down_;
  std::vector<int32_t> leaf_spine_;
  std::vector<int32_t> leaf_up_, leaf_down_;
  std::vector<int32_t> spine_up_, spine_down_;  // to/from the core block
  std::vector<int64_t> leaf_vertex_, spine_vertex_;
  int64_t core_vertex_ = -1;
};

}  // namespace parallax
