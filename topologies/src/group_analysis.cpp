// Link sharing: route every ring hop of every concurrent group, count the hops on each directed
// link, then give each group the bottleneck of its own hops (collectives.hpp).
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "parallax/topologies/collectives.hpp"

namespace parallax {
namespace {

using Hop = std::pair<int64_t, int64_t>;

// Hops with their routes, each hop routed once: the links of hop i are
// links[start[i], start[i + 1]).
struct RoutedHops {
  std::vector<int32_t> links;
  std::vector<size_t> start{0};
  size_t size() const { return start.size() - 1; }
  bool empty() const { return size() == 0; }
};

// The rings a group runs: intra-node rings (one per node with > 1 member) and inter-node rings
// (one per local member slot, over the nodes that have that slot).
struct GroupRings {
  int64_t nodes = 0;
  int64_t per_node = 0;
  RoutedHops intra;
  std::vector<RoutedHops> inter;  // per slot
};

void ring_hops(const ClusterGraph& g, const std::vector<int64_t>& members, RoutedHops& out) {
  if (members.size() < 2) return;
  for (size_t i = 0; i < members.size(); ++i) {
    g.route(members[i], members[(i + 1) % members.size()], out.links);
    out.start.push_back(out.links.size());
  }
}

GroupRings rings_of(const ClusterGraph& g, const std::vector<int64_t>& gpus) {
  // Members per node, nodes in order of first appearance, members in group order.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> by_node;
  std::unordered_map<int64_t, size_t> slot_of_node;  // node -> its entry in by_node
  for (int64_t gpu : gpus) {
    const int64_t n = g.node_of(gpu);
    const auto [it, added] = slot_of_node.try_emplace(n, by_node.size());
    if (added) by_node.push_back({n, {}});
    by_node[it->second].second.push_back(gpu);
  }
  GroupRings r;
  r.nodes = static_cast<int64_t>(by_node.size());
  for (const auto& [n, members] : by_node) {
    r.per_node = std::max<int64_t>(r.per_node, static_cast<int64_t>(members.size()));
    ring_hops(g, members, r.intra);
  }
  if (r.nodes > 1) {
    for (int64_t slot = 0; slot < r.per_node; ++slot) {
      std::vector<int64_t> members;
      for (const auto& [n, local] : by_node)
        if (slot < static_cast<int64_t>(local.size())) members.push_back(local[static_cast<size_t>(slot)]);
      r.inter.emplace_back();
      ring_hops(g, members, r.inter.back());
    }
  }
  return r;
}

// How many hops cross each directed link.
using LinkLoad = std::vector<int32_t>;

void add_load(const RoutedHops& hops, LinkLoad& load) {
  for (int32_t id : hops.links) ++load[static_cast<size_t>(id)];
}

// Bottleneck bandwidth and slowest step latency of hops [first, last) under the given load.
RingCost bottleneck(const ClusterGraph& g, const RoutedHops& hops, size_t first, size_t last,
                    const LinkLoad& load) {
  RingCost c;
  double bw = std::numeric_limits<double>::infinity();
  for (size_t h = first; h < last; ++h) {
    double lat = 0;
    for (size_t i = hops.start[h]; i < hops.start[h + 1]; ++i) {
      const int32_t id = hops.links[i];
      lat += g.link_latency(id);
      bw = std::min(bw, g.link_bandwidth(id) / load[static_cast<size_t>(id)]);
    }
    c.alpha_s = std::max(c.alpha_s, lat);
  }
  c.bandwidth_bytes_per_s = first == last ? 0 : bw;
  return c;
}

RingCost bottleneck(const ClusterGraph& g, const RoutedHops& hops, const LinkLoad& load) {
  return bottleneck(g, hops, 0, hops.size(), load);
}

}  // namespace

std::vector<GroupCost> analyse_groups(const ClusterGraph& g,
                                      std::span<const std::vector<int64_t>> groups) {
  std::vector<GroupRings> rings;
  rings.reserve(groups.size());
  for (const auto& grp : groups) rings.push_back(rings_of(g, grp));
  // Intra-node and inter-node phases run one after the other, so each has its own load.
  LinkLoad intra_load(static_cast<size_t>(g.link_count()), 0);
  LinkLoad inter_load(static_cast<size_t>(g.link_count()), 0);
  for (const GroupRings& r : rings) {
    add_load(r.intra, intra_load);
    for (const auto& slot : r.inter) add_load(slot, inter_load);
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
  LinkLoad load(static_cast<size_t>(g.link_count()), 0);
  RoutedHops hops;
  hops.start.reserve(transfers.size() + 1);
  for (const auto& [src, dst] : transfers) {
    g.route(src, dst, hops.links);
    hops.start.push_back(hops.links.size());
  }
  add_load(hops, load);
  std::vector<P2pCost> out;
  out.reserve(transfers.size());
  const int64_t per_node = g.spec().gpus_per_node;
  for (size_t i = 0; i < transfers.size(); ++i) {
    const RingCost c = bottleneck(g, hops, i, i + 1, load);
    const auto [src, dst] = transfers[i];
    out.push_back({c.alpha_s, c.bandwidth_bytes_per_s, src / per_node != dst / per_node});
  }
  return out;
}

}  // namespace parallax
