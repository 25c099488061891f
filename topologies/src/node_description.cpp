#include "parallax/topologies/node_description.hpp"

#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

constexpr std::array<std::pair<VertexKind, const char*>, 7> kVertexKinds{{
    {VertexKind::gpu, "gpu"},
    {VertexKind::nvswitch, "nvswitch"},
    {VertexKind::pcie, "pcie"},
    {VertexKind::nic, "nic"},
    {VertexKind::leaf, "leaf"},
    {VertexKind::spine, "spine"},
    {VertexKind::core, "core"},
}};
constexpr std::array<std::pair<LinkKind, const char*>, 3> kLinkKinds{{
    {LinkKind::nvlink, "nvlink"}, {LinkKind::pcie, "pcie"}, {LinkKind::network, "network"}}};

std::vector<int64_t> vertices_of(const NodeDescription& d, VertexKind k) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < d.vertices.size(); ++i)
    if (d.vertices[i].kind == k) out.push_back(static_cast<int64_t>(i));
  return out;
}

}  // namespace

const char* to_string(VertexKind k) {
  for (const auto& [kind, name] : kVertexKinds)
    if (kind == k) return name;
  return "?";
}

const char* to_string(LinkKind k) {
  for (const auto& [kind, name] : kLinkKinds)
    if (kind == k) return name;
  return "?";
}

std::vector<int64_t> NodeDescription::gpu_vertices() const { return vertices_of(*this, VertexKind::gpu); }
std::vector<int64_t> NodeDescription::nic_vertices() const { return vertices_of(*this, VertexKind::nic); }

NodeDescription default_node(const ClusterSpec& c) {
  NodeDescription d;
  d.source = "cluster " + c.name + " (one switch for the intra-node fabric, GPU-to-NIC rails)";
  const int64_t g = c.gpus_per_node;
  const int64_t n = c.inter.nics_per_node;
  for (int64_t i = 0; i < g; ++i) d.vertices.push_back({"GPU" + std::to_string(i), VertexKind::gpu});
  const int64_t sw = g;
  // A shared-memory host (the cpu-local preset) is modelled as a bus, like PCIe.
  const bool bus = c.intra.kind == "pcie" || c.intra.kind == "shared-memory";
  d.vertices.push_back({c.intra.kind == "pcie" ? "PCIe" : (bus ? "Memory" : "NVSwitch"),
                        bus ? VertexKind::pcie : VertexKind::nvswitch});
  for (int64_t i = 0; i < n; ++i) d.vertices.push_back({"NIC" + std::to_string(i), VertexKind::nic});
  const LinkKind intra_kind = bus ? LinkKind::pcie : LinkKind::nvlink;
  for (int64_t i = 0; i < g; ++i)
    d.links.push_back({i, sw, intra_kind, c.intra.nvlink_bandwidth_bytes_per_s, c.intra.latency_s / 2});
  for (int64_t i = 0; i < g; ++i) {
    const int64_t nic = c.inter.gpu_nic.empty() ? i * n / g
                                                : c.inter.gpu_nic[static_cast<size_t>(i)];
    d.gpu_nic.push_back(nic);
    // The GPU reaches its NIC over PCIe at least as fast as the NIC's line rate (GPUDirect RDMA
    // through a PCIe switch), so the NIC, not this link, bounds network traffic.
    d.links.push_back({i, sw + 1 + nic, LinkKind::pcie, c.inter.nic_bandwidth_bytes_per_s, 0});
  }
  return d;
}

NodeDescription read_node_description(JsonObjectReader& r) {
  NodeDescription d;
  d.source = r.get_string_or("source", "");
  std::map<std::string, int64_t> index;
  const nlohmann::json& vs = r.raw("vertices");
  if (!vs.is_array() || vs.empty()) r.fail("vertices", "must be a non-empty array");
  for (size_t i = 0; i < vs.size(); ++i) {
    JsonObjectReader v(vs[i], r.source(), r.path_of("vertices") + "[" + std::to_string(i) + "]");
    NodeVertex nv;
    nv.name = v.get_string("name");
    const std::string kind =
        v.get_enum("kind", {"gpu", "nvswitch", "pcie", "nic", "leaf", "spine", "core"});
    for (const auto& [k, name] : kVertexKinds)
      if (kind == name) nv.kind = k;
    v.finish();
    if (nv.name.empty() || index.count(nv.name))
      v.fail("name", "must be a unique, non-empty vertex name (got \"" + nv.name + "\")");
    if (nv.kind == VertexKind::leaf || nv.kind == VertexKind::spine || nv.kind == VertexKind::core)
      v.fail("kind", "network switches belong to the cluster, not to a node (got \"" + kind + "\")");
    index[nv.name] = static_cast<int64_t>(d.vertices.size());
    d.vertices.push_back(nv);
  }
  const nlohmann::json& ls = r.raw("links");
  if (!ls.is_array()) r.fail("links", "must be an array");
  for (size_t i = 0; i < ls.size(); ++i) {
    JsonObjectReader l(ls[i], r.source(), r.path_of("links") + "[" + std::to_string(i) + "]");
    NodeLink nl;
    for (const char* end : {"from", "to"}) {
      const std::string name = l.get_string(end);
      auto it = index.find(name);
      if (it == index.end()) l.fail(end, "unknown vertex \"" + name + "\"");
      (std::string(end) == "from" ? nl.from : nl.to) = it->second;
    }
    if (nl.from == nl.to) l.fail("to", "a link must join two different vertices");
    const std::string kind = l.get_enum("kind", {"nvlink", "pcie", "network"});
    for (const auto& [k, name] : kLinkKinds)
      if (kind == name) nl.kind = k;
    nl.bandwidth_bytes_per_s = l.get_number("bandwidth_bytes_per_s", 0, 1e15);
    if (nl.bandwidth_bytes_per_s <= 0) l.fail("bandwidth_bytes_per_s", "must be > 0 (got 0)");
    nl.latency_s = l.get_number_or("latency_s", 0, 1, 0);
    l.finish();
    d.links.push_back(nl);
  }
  const std::vector<int64_t> gpus = d.gpu_vertices();
  const std::vector<int64_t> nics = d.nic_vertices();
  if (gpus.empty()) r.fail("vertices", "must include at least one vertex of kind \"gpu\"");
  const nlohmann::json& rails = r.raw("gpu_nic");
  // A node without NICs (imported from nvidia-smi without NIC columns) lists none.
  const bool no_nics = nics.empty() && rails.is_array() && rails.empty();
  if (!rails.is_array() || (rails.size() != gpus.size() && !no_nics))
    r.fail("gpu_nic", "must list one NIC name per GPU (" + std::to_string(gpus.size()) + " GPUs)");
  for (size_t i = 0; i < rails.size(); ++i) {
    const std::string name = rails[i].is_string() ? rails[i].get<std::string>() : "";
    auto it = index.find(name);
    if (it == index.end() || d.vertices[static_cast<size_t>(it->second)].kind != VertexKind::nic)
      r.fail("gpu_nic", "entry " + std::to_string(i) + ": unknown NIC \"" + name + "\"");
    for (size_t k = 0; k < nics.size(); ++k)
      if (nics[k] == it->second) d.gpu_nic.push_back(static_cast<int64_t>(k));
  }
  r.finish();
  return d;
}

NodeDescription load_node_description(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  JsonObjectReader r(j, path);
  return read_node_description(r);
}

nlohmann::json to_json(const NodeDescription& d) {
  nlohmann::json vs = nlohmann::json::array();
  for (const NodeVertex& v : d.vertices) vs.push_back({{"name", v.name}, {"kind", to_string(v.kind)}});
  nlohmann::json ls = nlohmann::json::array();
  for (const NodeLink& l : d.links)
    ls.push_back({{"from", d.vertices[static_cast<size_t>(l.from)].name},
                  {"to", d.vertices[static_cast<size_t>(l.to)].name},
                  {"kind", to_string(l.kind)},
                  {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                  {"latency_s", l.latency_s}});
  const std::vector<int64_t> nics = d.nic_vertices();
  nlohmann::json rails = nlohmann::json::array();
  for (int64_t n : d.gpu_nic) rails.push_back(d.vertices[static_cast<size_t>(nics[static_cast<size_t>(n)])].name);
  return {{"source", d.source}, {"vertices", vs}, {"links", ls}, {"gpu_nic", rails}};
}

NodeDescription with_cluster_nics(NodeDescription d, const ClusterSpec& c) {
  if (!d.nic_vertices().empty()) return d;
  const NodeDescription wired = default_node(c);
  const std::vector<int64_t> gpus = d.gpu_vertices();
  if (static_cast<int64_t>(gpus.size()) != c.gpus_per_node) return d;  // check_node_fits says why
  const auto first_nic = static_cast<int64_t>(d.vertices.size());
  for (int64_t v : wired.nic_vertices()) d.vertices.push_back(wired.vertices[static_cast<size_t>(v)]);
  d.gpu_nic = wired.gpu_nic;
  for (size_t i = 0; i < gpus.size(); ++i)
    d.links.push_back({gpus[i], first_nic + d.gpu_nic[i], LinkKind::pcie,
                       c.inter.nic_bandwidth_bytes_per_s, 0});
  d.source += "; NICs and GPU-NIC rails of cluster " + c.name;
  return d;
}

void check_node_fits(const NodeDescription& d, const ClusterSpec& c, const std::string& source) {
  const auto gpus = static_cast<int64_t>(d.gpu_vertices().size());
  if (gpus != c.gpus_per_node)
    throw InputError(source, "$.vertices",
                     "GPUs per node do not match: the node has " + std::to_string(gpus) +
                         " GPUs, cluster " + c.name + " has gpus_per_node " +
                         std::to_string(c.gpus_per_node));
  const auto nics = static_cast<int64_t>(d.nic_vertices().size());
  if (nics != c.inter.nics_per_node)
    throw InputError(source, "$.vertices",
                     "NICs per node do not match: the node has " + std::to_string(nics) +
                         " NICs, cluster " + c.name + " has nics_per_node " +
                         std::to_string(c.inter.nics_per_node));
}

}  // namespace parallax
