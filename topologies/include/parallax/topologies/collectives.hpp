#pragma once
// Collective and point-to-point cost of concrete GPU groups on a cluster graph, in nccl-tests
// terms (bytes = nccl-tests "size": the all-reduce buffer, the all-gather output, the
// reduce-scatter input; GB = 1e9 bytes):
//   algbw = bytes / time;  busbw = algbw * factor,  factor 2(n-1)/n (all-reduce),
//   (n-1)/n (reduce-scatter, all-gather), 1 (broadcast, send/recv).
//
// A group on one node runs a ring over its members. A group spanning N nodes with k members per
// node runs hierarchically: the intra-node ring of the k local members (reduce-scatter before,
// all-gather after) and, for each local member, an inter-node ring (or double binary tree) over
// the N nodes on its 1/k share. Ring time = steps * alpha + factor * bytes / B, alpha = the step
// latency (sum of link latencies of the slowest hop), B = the ring's bottleneck: min over the
// links of its hops of link bandwidth / number of concurrent ring hops on that link (all groups
// analysed together run at once). Intra-node B is scaled by the cluster's collective efficiency.
// Tree (NCCL's double binary tree, all-reduce only): each node sends and receives 2 * share
// bytes, in 2 * ceil(log2 N) latency steps; within a node NCCL's tree is a chain, which costs
// what the ring costs.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parallax/topologies/cluster_graph.hpp"

namespace parallax {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast, send_recv };
enum class Algorithm { ring, tree, automatic };  // automatic: the faster of ring and tree

const char* to_string(Collective op);
const char* to_string(Algorithm a);
double busbw_factor(Collective op, int64_t n);

struct RingCost {
  double alpha_s = 0;                 // latency per step
  double bandwidth_bytes_per_s = 0;   // bottleneck after sharing
  bool operator==(const RingCost&) const = default;
};

struct GroupCost {
  int64_t size = 1;
  int64_t nodes = 1;
  int64_t per_node = 1;  // most members on one node (k)
  RingCost intra;        // ring over the k local members (or the whole single-node group)
  RingCost inter;        // ring over the nodes of the slowest local member slot
  bool operator==(const GroupCost&) const = default;
};

struct P2pCost {
  double alpha_s = 0;
  double bandwidth_bytes_per_s = 0;
  bool crosses_nodes = false;  // source and destination on different nodes
  bool operator==(const P2pCost&) const = default;
};

// Closed forms: a few flops, no graph access (the planner calls these millions of times).
// Throws InputError for tree with anything but all-reduce, and for send_recv (use p2p).
double collective_time_s(const GroupCost& g, Collective op, double bytes,
                         Algorithm algo = Algorithm::automatic);
inline double p2p_time_s(const P2pCost& c, double bytes) {
  return bytes <= 0 ? 0 : c.alpha_s + bytes / c.bandwidth_bytes_per_s;
}

// All-to-all of `bytes` per rank (nccl-tests alltoall "size": each rank sends bytes / n to every
// member, itself included), as the MoE token dispatch and combine run it. The peers on the
// member's node receive their (k - 1) / n of the buffer over NVLink at the intra-node ring's
// bandwidth; the peers on other nodes their (n - k) / n over the member's own NIC at the inter-node
// ring's; the two run at once, each paying one step latency:
//   t = max(alpha_intra + bytes (k - 1) / (n B_intra),  alpha_inter + bytes (n - k) / (n B_inter)).
double all_to_all_time_s(const GroupCost& g, double bytes);
// An exchange in which each member sends intra_bytes to peers on its node and inter_bytes to
// peers on other nodes, the two at once, each paying one step latency (all_to_all_time_s is the
// uniform case; a deduplicating MoE dispatcher sends other amounts):
//   t = max(alpha_intra + intra_bytes / B_intra,  alpha_inter + inter_bytes / B_inter).
double two_level_exchange_time_s(const GroupCost& g, double intra_bytes, double inter_bytes);

// Analyses groups of GPUs that run the same collective at the same time: each group's cost with
// the link sharing of all of them. Each group lists distinct GPU ids in ring (rank) order.
std::vector<GroupCost> analyse_groups(const ClusterGraph& g,
                                      std::span<const std::vector<int64_t>> groups);
// Concurrent transfers (src GPU, dst GPU), one direction each.
std::vector<P2pCost> analyse_p2p(const ClusterGraph& g,
                                 std::span<const std::pair<int64_t, int64_t>> transfers);

}  // namespace parallax
