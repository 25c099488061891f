// NCCL topology dump (NCCL_TOPO_DUMP_FILE) -> node description. See import.hpp.
#include <algorithm>
#include <map>

#include "parallax/core/error.hpp"
#include "parallax/topologies/import.hpp"
#include "xml_lite.hpp"

namespace parallax {
namespace {

struct Found {
  const xml::Element* e;
  std::vector<int> path;  // child indices from the root
  std::string busid;      // of the nearest enclosing <pci>
};

// One NIC: the <net> ports of one <nic> (a dual-port card lists two), or a <net> outside any.
struct Nic {
  std::vector<const xml::Element*> ports;
  std::vector<int> path;  // of the <nic> (or the lone <net>)
};

void collect(const xml::Element& e, std::vector<int>& path, const std::string& busid,
             std::vector<Found>& gpus, std::vector<Nic>& nics) {
  const std::string here = e.name == "pci" ? e.attr("busid") : busid;
  if (e.name == "gpu") gpus.push_back({&e, path, here});
  if (e.name == "net") nics.push_back({{&e}, path});
  if (e.name == "nic") {
    Nic n{{}, path};
    for (const xml::Element& c : e.children)
      if (c.name == "net") n.ports.push_back(&c);
    if (!n.ports.empty()) nics.push_back(n);
  }
  for (size_t i = 0; i < e.children.size(); ++i) {
    if (e.name == "nic" && e.children[i].name == "net") continue;  // counted with its <nic>
    path.push_back(static_cast<int>(i));
    collect(e.children[i], path, here, gpus, nics);
    path.pop_back();
  }
}

size_t tree_distance(const std::vector<int>& a, const std::vector<int>& b) {
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  return a.size() + b.size() - 2 * common;
}

double number_attr(const xml::Element& e, const std::string& key, const std::string& source) {
  const std::string v = e.attr(key);
  const std::string where = "line " + std::to_string(e.line) + ": <" + e.name + " " + key + ">";
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw InputError(source, where, "must be a number (got \"" + v + "\")");
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Adds NIC n (its ports fused) as a vertex of d; returns its bandwidth in bytes/s.
double add_nic(NodeDescription& d, const Nic& n, const std::string& source) {
  double mbps = 0;
  std::string name;
  bool unnamed = false;
  for (const xml::Element* p : n.ports) {
    unnamed = unnamed || p->attr("name").empty();
    const double port_mbps = number_attr(*p, "speed", source);
    if (port_mbps <= 0)
      throw InputError(source, "line " + std::to_string(p->line) + ": <net speed>",
                       "NIC " + p->attr("name") + ": bandwidth must be > 0 (got " + p->attr("speed") + ")");
    mbps += port_mbps;
    if (!name.empty()) name += '+';
    name += p->attr("name");
  }
  d.vertices.push_back({unnamed ? "NIC" + std::to_string(d.vertices.size()) : name, VertexKind::nic});
  return mbps * 1e6 / 8;
}

}  // namespace

NodeDescription import_nccl_topology_xml(const std::string& text, const std::string& source,
                                         const ImportOptions& opt) {
  const xml::Element root = xml::parse(text, source);
  if (root.name != "system")
    throw InputError(source, "line " + std::to_string(root.line), "root element must be <system> (got <" + root.name + ">)");
  std::vector<Found> gpus;
  std::vector<Nic> nets;
  std::vector<int> path;
  collect(root, path, "", gpus, nets);
  if (gpus.empty()) throw InputError(source, "<gpu>", "no GPU in the topology");
  if (nets.empty()) throw InputError(source, "<net>", "no NIC in the topology");
  std::sort(gpus.begin(), gpus.end(), [&](const Found& a, const Found& b) {
    return number_attr(*a.e, "dev", source) < number_attr(*b.e, "dev", source);
  });

  NodeDescription d;
  d.source = "NCCL topology dump " + source;
  std::map<std::string, int64_t> gpu_by_busid;
  for (const Found& g : gpus) {
    gpu_by_busid[lower(g.busid)] = static_cast<int64_t>(d.vertices.size());
    d.vertices.push_back({"GPU" + g.e->attr("dev"), VertexKind::gpu});
  }
  // A dual-port card is one NIC at the sum of its ports' speeds, named "port0+port1": NCCL fuses
  // the ports under one <nic> into one virtual NIC by default (NCCL_NET_MERGE_LEVEL=PORT,
  // ncclTopoGetFusionEnv in src/graph/topo.cc; speed summed and names joined with '+' in
  // ncclIbMakeVDeviceInternal, src/transport/net_ib/init.cc), as the presets count NICs.
  int64_t nvswitch = -1;
  std::vector<double> nic_bytes_per_s;
  for (const Nic& n : nets) nic_bytes_per_s.push_back(add_nic(d, n, source));
  // NVLinks.
  for (size_t gi = 0; gi < gpus.size(); ++gi) {
    double to_switch = 0;
    for (const xml::Element& l : gpus[gi].e->children) {
      if (l.name != "nvlink") continue;
      const double count = number_attr(l, "count", source);
      if (count <= 0)
        throw InputError(source, "line " + std::to_string(l.line) + ": <nvlink count>",
                         "bandwidth must be > 0 (got count " + l.attr("count") + ")");
      const std::string tclass = lower(l.attr("tclass"));
      if (tclass == "0x068000") {
        to_switch += count;
        continue;
      }
      auto peer = gpu_by_busid.find(lower(l.attr("target")));
      if (peer == gpu_by_busid.end())
        throw InputError(source, "line " + std::to_string(l.line) + ": <nvlink target>",
                         "unknown vertex \"" + l.attr("target") + "\" (no GPU or NVSwitch with that bus id)");
      if (peer->second > static_cast<int64_t>(gi))  // each pair once; the peer lists it too
        d.links.push_back({static_cast<int64_t>(gi), peer->second, LinkKind::nvlink,
                           count * opt.nvlink_link_bytes_per_s, 0});
    }
    if (to_switch > 0) {
      if (nvswitch < 0) {
        nvswitch = static_cast<int64_t>(d.vertices.size());
        d.vertices.push_back({"NVSwitch", VertexKind::nvswitch});
      }
      d.links.push_back({static_cast<int64_t>(gi), nvswitch, LinkKind::nvlink,
                         to_switch * opt.nvlink_link_bytes_per_s, 0});
    }
  }
  // Nearest NIC of each GPU in the PCI tree; ties to the least used.
  std::vector<int> used(nets.size(), 0);
  const auto first_nic = static_cast<int64_t>(gpus.size());
  for (size_t gi = 0; gi < gpus.size(); ++gi) {
    size_t best = 0;
    for (size_t ni = 1; ni < nets.size(); ++ni) {
      const size_t dn = tree_distance(gpus[gi].path, nets[ni].path);
      const size_t db = tree_distance(gpus[gi].path, nets[best].path);
      if (dn < db || (dn == db && used[ni] < used[best])) best = ni;
    }
    ++used[best];
    d.gpu_nic.push_back(static_cast<int64_t>(best));
    d.links.push_back({static_cast<int64_t>(gi), first_nic + static_cast<int64_t>(best), LinkKind::pcie,
                       nic_bytes_per_s[best], 0});
  }
  return d;
}

}  // namespace parallax
