#include "parallax/topologies/cluster_graph.hpp"

#include <algorithm>
#include <cmath>

#include <boost/graph/breadth_first_search.hpp>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

// The node template as a small graph of its own, to find routes inside a node with BFS.
struct TemplateEdge {
  int32_t id = 0;  // link id relative to the node's first link
};
using TemplateGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                            boost::no_property, TemplateEdge>;
using TemplateEdgeDesc = boost::graph_traits<TemplateGraph>::edge_descriptor;

// Records, for every vertex BFS reaches, the tree edge it was reached by.
struct RouteRecorder : boost::default_bfs_visitor {
  std::vector<TemplateEdgeDesc>* pred;
  std::vector<char>* reached;
  void tree_edge(TemplateEdgeDesc e, const TemplateGraph& g) const {
    const auto t = boost::target(e, g);
    (*pred)[t] = e;
    (*reached)[t] = 1;
  }
};

// Fewest-hop route from s to every vertex: the link ids along the BFS tree (empty: unreachable).
std::vector<std::vector<int32_t>> bfs_routes(const TemplateGraph& tg, int64_t s) {
  const auto n = boost::num_vertices(tg);
  const auto src = static_cast<size_t>(s);
  std::vector<TemplateEdgeDesc> pred(n);
  std::vector<char> reached(n, 0);
  RouteRecorder rec;
  rec.pred = &pred;
  rec.reached = &reached;
  boost::breadth_first_search(tg, src, boost::visitor(rec));
  std::vector<std::vector<int32_t>> routes(n);
  for (size_t v = 0; v < n; ++v) {
    if (!reached[v] || v == src) continue;
    for (size_t u = v; u != src;) {
      const TemplateEdgeDesc e = pred[u];
      routes[v].push_back(tg[e].id);
      u = boost::source(e, tg);
    }
    std::reverse(routes[v].begin(), routes[v].end());
  }
  return routes;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ClusterGraph::ClusterGraph(const ClusterSpec& c) : ClusterGraph(c, default_node(c)) {}

ClusterGraph::ClusterGraph(const ClusterSpec& c, const NodeDescription& imported) : spec_(c) {
  const NodeDescription node = with_cluster_nics(imported, c);
  check_node_fits(node, c, "node description");
  intra_collective_efficiency_ =
      c.intra.allreduce_busbw_bytes_per_s / c.intra.p2p_bandwidth_bytes_per_s;
  add_nodes(node);
  add_fabric();
}

int64_t ClusterGraph::add_link(int64_t u, int64_t v, LinkKind kind, double bw, double lat) {
  const auto id = static_cast<int64_t>(bandwidth_.size());
  boost::add_edge(static_cast<size_t>(u), static_cast<size_t>(v), TopoLink{id, kind, bw, lat}, g_);
  bandwidth_.push_back(bw);
  latency_.push_back(lat);
  return id;
}

void ClusterGraph::add_nodes(const NodeDescription& node) {
  const ClusterSpec& c = spec_;
  const double intra_scale = c.intra.p2p_bandwidth_bytes_per_s / c.intra.nvlink_bandwidth_bytes_per_s;
  const double nic_scale =
      c.inter.nic_effective_bandwidth_bytes_per_s / c.inter.nic_bandwidth_bytes_per_s;
  vertices_per_node_ = static_cast<int64_t>(node.vertices.size());
  for (const NodeVertex& v : node.vertices) template_names_.push_back(v.name);
  links_per_node_ = 2 * static_cast<int64_t>(node.links.size());
  const std::vector<int64_t> gpus = node.gpu_vertices();
  const std::vector<int64_t> nics = node.nic_vertices();
  const auto G = static_cast<size_t>(gpus.size());

  // Routes inside one node, found once on the template and shifted per node.
  TemplateGraph tg(node.vertices.size());
  for (size_t i = 0; i < node.links.size(); ++i) {
    const NodeLink& l = node.links[i];
    boost::add_edge(static_cast<size_t>(l.from), static_cast<size_t>(l.to), TemplateEdge{static_cast<int32_t>(2 * i)}, tg);
    boost::add_edge(static_cast<size_t>(l.to), static_cast<size_t>(l.from), TemplateEdge{static_cast<int32_t>(2 * i + 1)}, tg);
  }
  local_route_.assign(G * G, {});
  gpu_to_nic_.assign(G, {});
  nic_to_gpu_.assign(G, {});
  gpu_nic_ = node.gpu_nic;
  nic_vertex_local_ = nics;
  for (size_t a = 0; a < G; ++a) {
    const auto routes = bfs_routes(tg, gpus[a]);
    for (size_t b = 0; b < G; ++b) {
      if (a == b) continue;
      local_route_[a * G + b] = routes[static_cast<size_t>(gpus[b])];
      if (local_route_[a * G + b].empty())
        throw InputError("node description", "$.links",
                         "GPU " + node.vertices[static_cast<size_t>(gpus[a])].name + " cannot reach GPU " +
                             node.vertices[static_cast<size_t>(gpus[b])].name);
    }
    const int64_t nic_v = nics[static_cast<size_t>(gpu_nic_[a])];
    gpu_to_nic_[a] = routes[static_cast<size_t>(nic_v)];
    if (gpu_to_nic_[a].empty())
      throw InputError("node description", "$.gpu_nic",
                       "GPU " + node.vertices[static_cast<size_t>(gpus[a])].name + " cannot reach its NIC");
    nic_to_gpu_[a] = bfs_routes(tg, nic_v)[static_cast<size_t>(gpus[a])];
  }

  // Imported nodes carry no latencies: spread the cluster's per-step latency over the links of a
  // GPU-to-GPU route (GPU-switch-GPU: half on each link, so one step costs intra_node.latency_s).
  bool has_latency = false;
  for (const NodeLink& l : node.links) has_latency = has_latency || l.latency_s > 0;
  const double filled_latency =
      !has_latency && G > 1 ? c.intra.latency_s / static_cast<double>(local_route_[1].size()) : 0;
  for (int64_t n = 0; n < c.nodes; ++n) {
    for (size_t i = 0; i < node.vertices.size(); ++i)
      boost::add_vertex(TopoVertex{node.vertices[i].kind, n, static_cast<int64_t>(i)}, g_);
    const int64_t base = n * vertices_per_node_;
    for (const NodeLink& l : node.links) {
      const bool touches_nic = node.vertices[static_cast<size_t>(l.from)].kind == VertexKind::nic ||
                               node.vertices[static_cast<size_t>(l.to)].kind == VertexKind::nic;
      const double bw = l.bandwidth_bytes_per_s * (touches_nic ? nic_scale : intra_scale);
      const double lat = has_latency || touches_nic ? l.latency_s : filled_latency;
      add_link(base + l.from, base + l.to, l.kind, bw, lat);
      add_link(base + l.to, base + l.from, l.kind, bw, lat);
    }
  }
}

void ClusterGraph::add_fabric() {
  const ClusterSpec& c = spec_;
  const InterNodeNetwork& net = c.inter;
  const int64_t nics = net.nics_per_node;
  const int64_t k = net.switch_radix;
  const double o = net.oversubscription;
  const auto down = net.tiers == 1 ? k : static_cast<int64_t>(std::floor(static_cast<double>(k) * o / (1 + o)));
  const double port_bw = net.nic_effective_bandwidth_bytes_per_s;
  const double uplink_bw = static_cast<double>(down) * port_bw / o;
  const double lat = net.latency_s / 2;
  const int64_t su = std::max<int64_t>(1, down);  // nodes per rail leaf
  const int64_t num_su = ceil_div(c.nodes, su);
  const int64_t num_leaves = net.rail_optimized ? num_su * nics : ceil_div(c.nodes * nics, down);
  if (net.tiers == 1 && num_leaves > 1)
    throw InputError("cluster " + c.name, "$.inter_node.tiers",
                     "one switch of radix " + std::to_string(k) + " cannot hold " +
                         std::to_string(c.nodes * nics) + " NICs (use more tiers)");
  if (net.tiers == 2 && num_leaves > k)
    throw InputError("cluster " + c.name, "$.nodes",
                     std::to_string(num_leaves) + " leaf switches exceed what a two-tier fat tree of radix " +
                         std::to_string(k) + " joins (" + std::to_string(k) + ")");
  const int64_t pod = std::max<int64_t>(1, k / 2);
  const int64_t num_pods = net.tiers >= 3 ? ceil_div(num_leaves, pod) : (net.tiers == 2 ? 1 : 0);
  if (net.tiers >= 3 && num_pods > k)
    throw InputError("cluster " + c.name, "$.nodes",
                     std::to_string(num_leaves) + " leaf switches exceed what a three-tier fat tree of radix " +
                         std::to_string(k) + " joins (" + std::to_string(k * pod) + ")");

  for (int64_t l = 0; l < num_leaves; ++l)
    leaf_vertex_.push_back(static_cast<int64_t>(boost::add_vertex(TopoVertex{VertexKind::leaf, -1, l}, g_)));
  for (int64_t s = 0; s < num_pods; ++s)
    spine_vertex_.push_back(static_cast<int64_t>(boost::add_vertex(TopoVertex{VertexKind::spine, -1, s}, g_)));
  if (net.tiers >= 3)
    core_vertex_ = static_cast<int64_t>(boost::add_vertex(TopoVertex{VertexKind::core, -1, 0}, g_));

  // NIC <-> leaf.
  for (int64_t n = 0; n < c.nodes; ++n) {
    for (int64_t r = 0; r < nics; ++r) {
      const int64_t leaf = net.rail_optimized ? (n / su) * nics + r : (n * nics + r) / down;
      const int64_t nic_v = n * vertices_per_node_ + nic_vertex_local_[static_cast<size_t>(r)];
      const int64_t leaf_v = leaf_vertex_[static_cast<size_t>(leaf)];
      nic_leaf_.push_back(static_cast<int32_t>(leaf));
      nic_up_.push_back(static_cast<int32_t>(add_link(nic_v, leaf_v, LinkKind::network, port_bw, lat)));
      nic_down_.push_back(static_cast<int32_t>(add_link(leaf_v, nic_v, LinkKind::network, port_bw, lat)));
    }
  }
  // Leaf <-> spine block.
  std::vector<double> pod_up_bw(static_cast<size_t>(num_pods), 0.0);
  for (int64_t l = 0; l < num_leaves && num_pods > 0; ++l) {
    const int64_t order = net.rail_optimized ? (l % nics) * num_su + l / nics : l;
    const int64_t s = net.tiers >= 3 ? order / pod : 0;
    leaf_spine_.push_back(static_cast<int32_t>(s));
    const int64_t lv = leaf_vertex_[static_cast<size_t>(l)];
    const int64_t sv = spine_vertex_[static_cast<size_t>(s)];
    leaf_up_.push_back(static_cast<int32_t>(add_link(lv, sv, LinkKind::network, uplink_bw, 0)));
    leaf_down_.push_back(static_cast<int32_t>(add_link(sv, lv, LinkKind::network, uplink_bw, 0)));
    pod_up_bw[static_cast<size_t>(s)] += uplink_bw;
  }
  // Spine block <-> core block: full bisection above the leaves.
  for (int64_t s = 0; s < num_pods && core_vertex_ >= 0; ++s) {
    const int64_t sv = spine_vertex_[static_cast<size_t>(s)];
    spine_up_.push_back(static_cast<int32_t>(add_link(sv, core_vertex_, LinkKind::network, pod_up_bw[static_cast<size_t>(s)], 0)));
    spine_down_.push_back(static_cast<int32_t>(add_link(core_vertex_, sv, LinkKind::network, pod_up_bw[static_cast<size_t>(s)], 0)));
  }
}

std::string ClusterGraph::vertex_name(int64_t v) const {
  const TopoVertex& x = g_[static_cast<size_t>(v)];
  if (x.node >= 0)
    return "node" + std::to_string(x.node) + "/" + template_names_[static_cast<size_t>(x.index)];
  return std::string(to_string(x.kind)) + (x.kind == VertexKind::core ? "" : std::to_string(x.index));
}

int64_t ClusterGraph::leaf_of(int64_t gpu) const {
  const int64_t local = gpu % spec_.gpus_per_node;
  return nic_leaf_[static_cast<size_t>(node_of(gpu) * spec_.inter.nics_per_node + gpu_nic_[static_cast<size_t>(local)])];
}

void ClusterGraph::route(int64_t a, int64_t b, std::vector<int32_t>& out) const {
  const int64_t G = spec_.gpus_per_node;
  const int64_t na = a / G, nb = b / G;
  const auto ia = static_cast<size_t>(a % G), ib = static_cast<size_t>(b % G);
  const auto base_a = static_cast<int32_t>(na * links_per_node_);
  if (na == nb) {
    for (int32_t id : local_route_[ia * static_cast<size_t>(G) + ib]) out.push_back(base_a + id);
    return;
  }
  const auto base_b = static_cast<int32_t>(nb * links_per_node_);
  for (int32_t id : gpu_to_nic_[ia]) out.push_back(base_a + id);
  const auto nic_a = static_cast<size_t>(na * spec_.inter.nics_per_node + gpu_nic_[ia]);
  const auto nic_b = static_cast<size_t>(nb * spec_.inter.nics_per_node + gpu_nic_[ib]);
  out.push_back(nic_up_[nic_a]);
  const auto la = static_cast<size_t>(nic_leaf_[nic_a]), lb = static_cast<size_t>(nic_leaf_[nic_b]);
  if (la != lb) {
    out.push_back(leaf_up_[la]);
    const auto sa = static_cast<size_t>(leaf_spine_[la]), sb = static_cast<size_t>(leaf_spine_[lb]);
    if (sa != sb) {
      out.push_back(spine_up_[sa]);
      out.push_back(spine_down_[sb]);
    }
    out.push_back(leaf_down_[lb]);
  }
  out.push_back(nic_down_[nic_b]);
  for (int32_t id : nic_to_gpu_[ib]) out.push_back(base_b + id);
}

std::vector<TierSummary> ClusterGraph::tiers() const {
  std::vector<TierSummary> out;
  auto sum = [&](const std::vector<int32_t>& ids) {
    double s = 0;
    for (int32_t id : ids) s += link_bandwidth(id);
    return s;
  };
  out.push_back({"leaf", static_cast<int64_t>(leaf_vertex_.size()), sum(nic_up_), sum(leaf_up_)});
  if (!spine_vertex_.empty())
    out.push_back({"spine", static_cast<int64_t>(spine_vertex_.size()), sum(leaf_up_), sum(spine_up_)});
  if (core_vertex_ >= 0) out.push_back({"core", 1, sum(spine_up_), 0});
  return out;
}

}  // namespace parallax
