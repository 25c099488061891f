#include "parallax/costmodel/comm.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <string>

namespace parallax {
namespace {

// Coordinates of rank r under an order string like "tp-dp-pp" (innermost first).
struct Layout {
  std::array<std::string, 3> names;
  std::array<int64_t, 3> sizes{};
};

Layout layout(const PlanSpec& p) {
  Layout l;
  std::map<std::string, int64_t> size{{"tp", p.tp}, {"dp", p.dp}, {"pp", p.pp}};
  std::stringstream ss(p.order);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, '-') && i < 3) {
    if (part == "cp") continue;  // context parallelism is size 1 in these plans
    l.names[static_cast<size_t>(i)] = part;
    l.sizes[static_cast<size_t>(i)] = size.at(part);
    ++i;
  }
  return l;
}

int64_t stride_of(const Layout& l, const std::string& dim) {
  int64_t stride = 1;
  for (size_t i = 0; i < 3; ++i) {
    if (l.names[i] == dim) return stride;
    stride *= l.sizes[i];
  }
  return stride;
}

GroupSpan span_of(int64_t size, int64_t stride, int64_t gpus_per_node) {
  std::map<int64_t, int64_t> per_node;
  for (int64_t i = 0; i < size; ++i) ++per_node[(i * stride) / gpus_per_node];
  GroupSpan g;
  g.size = size;
  g.nodes = static_cast<int64_t>(per_node.size());
  g.per_node = 0;
  for (const auto& [node, count] : per_node) g.per_node = std::max(g.per_node, count);
  return g;
}

double ring_factor(Collective op, double n) {
  switch (op) {
    case Collective::all_reduce: return 2 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (n - 1) / n;
    case Collective::send_recv: return 1;
  }
  return 1;
}

double steps(Collective op, double n) {
  return op == Collective::all_reduce ? 2 * (n - 1) : (n - 1);
}

}  // namespace

PlanSpans plan_spans(const PlanSpec& p, int64_t gpus_per_node) {
  const Layout l = layout(p);
  PlanSpans s;
  s.tp = span_of(p.tp, stride_of(l, "tp"), gpus_per_node);
  s.dp = span_of(p.dp, stride_of(l, "dp"), gpus_per_node);
  // A pipeline's p2p crosses nodes when any two neighbouring stages sit on different nodes.
  const int64_t pp_stride = stride_of(l, "pp");
  for (int64_t i = 0; i + 1 < p.pp; ++i) {
    if ((i * pp_stride) / gpus_per_node != ((i + 1) * pp_stride) / gpus_per_node) {
      s.pp_crosses_nodes = true;
    }
  }
  return s;
}

double busbw_factor(Collective op, int64_t n) { return ring_factor(op, static_cast<double>(n)); }

double network_bandwidth_per_gpu(const ClusterSpec& c, const GroupSpan& g) {
  // Every GPU of the node runs a group of this kind at the same time, so the node's NICs are
  // shared by all its GPUs. Beyond one leaf's reach, oversubscription divides what is left.
  double bw = static_cast<double>(c.inter.nics_per_node) * c.inter.nic_effective_bandwidth_bytes_per_s /
              static_cast<double>(c.gpus_per_node);
  const int64_t nodes_per_leaf = std::max<int64_t>(1, c.inter.switch_radix / 2);
  if (c.inter.tiers > 1 && g.nodes > nodes_per_leaf) bw /= c.inter.oversubscription;
  return bw;
}

double collective_time_s(const ClusterSpec& c, Collective op, const GroupSpan& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return 0;
  const double bus_intra = c.intra.allreduce_busbw_bytes_per_s;
  if (op == Collective::send_recv) return p2p_time_s(c, g.nodes > 1, bytes);
  if (g.nodes <= 1) {
    const double n = static_cast<double>(g.size);
    return steps(op, n) * c.intra.latency_s + ring_factor(op, n) * bytes / bus_intra;
  }
  // Hierarchical: intra-node reduce-scatter / all-gather over the k local members, and the
  // inter-node collective on each member's 1/k share over its share of the NICs.
  const double k = static_cast<double>(g.per_node);
  const double nodes = static_cast<double>(g.nodes);
  const double net = network_bandwidth_per_gpu(c, g);
  double t = steps(op, nodes) * c.inter.latency_s + ring_factor(op, nodes) * (bytes / k) / net;
  if (g.per_node > 1) {
    t += steps(op, k) * c.intra.latency_s + ring_factor(op, k) * bytes / bus_intra;
  }
  return t;
}

double p2p_time_s(const ClusterSpec& c, bool cross_node, double bytes) {
  if (bytes <= 0) return 0;
  if (!cross_node) return c.intra.latency_s + bytes / c.intra.p2p_bandwidth_bytes_per_s;
  GroupSpan pair{2, 2, 1};
  return c.inter.latency_s + bytes / network_bandwidth_per_gpu(c, pair);
}

}  // namespace parallax
