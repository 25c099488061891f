// Link sharing: route every ring hop of every concurrent group, count the hops on each directed
// link, then give each group the bottleneck of its own hops (collectives.hpp).
#include <algorithm>
#include <limits>
#include <map>

#include "parallax/topologies/collectives.hpp"

namespace parallax {
namespace {

using Hop = std::pair<int64_t, int64_t>;

// The rings a group runs: intra-node rings (one per node with > 1 member) and inter-node rings
// (one per local member slot, over the nodes that have that slot).
struct GroupRings {
  int64_t nodes = 0;
  int64_t per_node = 0;
  std::vector<Hop> intra;
  std::vector<std::vector<Hop>> inter;  // per slot
};

void ring_hops(const std::vector<int64_t>& members, std::vector<Hop>& out) {
  if (members.size() < 2) return;
  for (size_t i = 0; i < members.size(); ++i) out.emplace_back(members[i], members[(i + 1) % members.size()]);
}

GroupRings rings_of(const ClusterGraph& g, const std::vector<int64_t>& gpus) {
  // Members per node, nodes in order of first appearance, members in group order.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> by_node;
  for (int64_t gpu : gpus) {
    const int64_t n = g.node_of(gpu);
    auto it = std::find_if(by_node.begin(), by_node.end(), [n](const auto& e) { return e.first == n; });
    if (it == by_node.end()) {
      by_node.push_back({n, {}});
      it = by_node.end() - 1;
    }
    it->second.push_back(gpu);
  }
  GroupRings r;
  r.nodes = static_cast<int64_t>(by_node.size());
  for (const auto& [n, members] : by_node) {
    r.per_node = std::max<int64_t>(r.per_node, static_cast<int64_t>(members.size()));
    ring_hops(members, r.intra);
  }
  if (r.nodes > 1) {
    for (int64_t slot = 0; slot < r.per_node; ++slot) {
      std::vector<int64_t> members;
      for (const auto& [n, local] : by_node)
        if (slot < static_cast<int64_t>(local.size())) members.push_back(local[static_cast<size_t>(slot)]);
      r.inter.emplace_back();
      ring_hops(members, r.inter.back());
    }
  }
  return r;
}

struct LinkLoad {
  std::vector<int32_t> count;
  std::vector<int32_t> scratch;
};

void add_load(const ClusterGraph& g, const std::vector<Hop>& hops, LinkLoad& load) {
  for (const Hop& h : hops) {
    load.scratch.clear();
    g.route(h.first, h.second, load.scratch);
    for (int32_t id : load.scratch) ++load.count[static_cast<size_t>(id)];
  }
}

// Bottleneck bandwidth and slowest step latency of a set of hops under the given load.
RingCost bottleneck(const ClusterGraph& g, const std::vector<Hop>& hops, LinkLoad& load) {
  RingCost c;
  double bw = std::numeric_limits<double>::infinity();
  for (const Hop& h : hops) {
    load.scratch.clear();
    g.route(h.first, h.second, load.scratch);
    double lat = 0;
    for (int32_t id : load.scratch) {
      lat += g.link_latency(id);
      bw = std::min(bw, g.link_bandwidth(id) / load.count[static_cast<size_t>(id)]);
    }
    c.alpha_s = std::max(c.alpha_s, lat);
  }
  c.bandwidth_bytes_per_s = hops.empty() ? 0 : bw;
  return c;
}

}  // namespace

std::vector<GroupCost> analyse_groups(const ClusterGraph& g,
                                      std::span<const std::vector<int64_t>> groups) {
  std::vector<GroupRings> rings;
  rings.reserve(groups.size());
  for (const auto& grp : groups) rings.push_back(rings_of(g, grp));
  // Intra-node and inter-node phases run one after the other, so each has its own load.
  LinkLoad intra_load{std::vector<int32_t>(static_cast<size_t>(g.link_count()), 0), {}};
  LinkLoad inter_load{std::vector<int32_t>(static_cast<size_t>(g.link_count()), 0), {}};
  for (const GroupRings& r : rings) {
    add_load(g, r.intra, intra_load);
    for (const auto& slot : r.inter) add_load(g, slot, inter_load);
  }
  std::vector<GroupCost> out;
  out.reserve(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupRings& r = rings[i];
    GroupCost c;
    c.size = static_cast<int64_t>(groups[i].size());
    c.nodes = std::max<int64_t>(1, r.nodes);
    c.per_node = std::max<int64_t>(1, r.per_node);
    c.intra = bottleneck(g, r.intra, intra_load);
    c.intra.bandwidth_bytes_per_s *= g.intra_collective_efficiency();
    for (const auto& slot : r.inter) {
      // A slot only one node has (uneven groups, e.g. 6 GPUs as 2 + 4) runs no inter-node ring.
      if (slot.empty()) continue;
      const RingCost s = bottleneck(g, slot, inter_load);
      if (c.inter.bandwidth_bytes_per_s == 0 || s.bandwidth_bytes_per_s < c.inter.bandwidth_bytes_per_s)
        c.inter.bandwidth_bytes_per_s = s.bandwidth_bytes_per_s;
      c.inter.alpha_s = std::max(c.inter.alpha_s, s.alpha_s);
    }
    out.push_back(c);
  }
  return out;
}

std::vector<P2pCost> analyse_p2p(const ClusterGraph& g,
                                 std::span<const std::pair<int64_t, int64_t>> transfers) {
  LinkLoad load{std::vector<int32_t>(static_cast<size_t>(g.link_count()), 0), {}};
  const std::vector<Hop> hops(transfers.begin(), transfers.end());
  add_load(g, hops, load);
  std::vector<P2pCost> out;
  out.reserve(hops.size());
  for (const Hop& h : hops) {
    const RingCost c = bottleneck(g, {h}, load);
    const int64_t per_node = g.spec().gpus_per_node;
    out.push_back({c.alpha_s, c.bandwidth_bytes_per_s, h.first / per_node != h.second / per_node});
  }
  return out;
}

}  // namespace parallax
