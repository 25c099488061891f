// `nvidia-smi topo -m` text -> node description. See import.hpp.
#include <algorithm>
#include <map>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/topologies/import.hpp"

namespace parallax {
namespace {

std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> out;
  for (std::string t; ss >> t;) out.push_back(t);
  return out;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Nearness of a GPU-NIC cell; larger is farther; -1 for an unknown cell.
int nic_distance(const std::string& cell) {
  static const std::map<std::string, int> order{{"PIX", 1}, {"PXB", 2}, {"PHB", 3}, {"NODE", 4}, {"SYS", 5}};
  auto it = order.find(cell);
  return it == order.end() ? -1 : it->second;
}

// The matrix nvidia-smi topo -m prints: its header's columns, each row's cells under them, and
// the NIC legend ("NIC0: mlx5_0").
struct SmiTable {
  std::vector<std::string> columns;  // GPU0.., NIC0.. in header order
  std::map<std::string, std::vector<std::string>> rows;
  std::map<std::string, std::string> nic_names;  // "NIC0" -> "mlx5_0"
  int header_line = 0;
};

SmiTable read_smi_table(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  SmiTable out;
  std::vector<std::string>& columns = out.columns;
  std::map<std::string, std::vector<std::string>>& rows = out.rows;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    // nvidia-smi colours the header with escape codes on a terminal; drop them.
    for (size_t p; (p = line.find('\x1b')) != std::string::npos;) {
      const size_t m = line.find('m', p);
      line.erase(p, m == std::string::npos ? std::string::npos : m - p + 1);
    }
    const std::vector<std::string> t = split_ws(line);
    if (t.empty()) continue;
    if (columns.empty() && starts_with(t[0], "GPU") && t.size() > 1 && starts_with(t[1], "GPU")) {
      for (const std::string& c : t) {
        if (!starts_with(c, "GPU") && !starts_with(c, "NIC") && !starts_with(c, "mlx")) break;
        columns.push_back(c);
      }
      out.header_line = line_no;
      continue;
    }
    if (!columns.empty() && (starts_with(t[0], "GPU") || starts_with(t[0], "NIC") || starts_with(t[0], "mlx")) &&
        t.size() > columns.size() && rows.find(t[0]) == rows.end() && t[0].back() != ':') {
      rows[t[0]] = std::vector<std::string>(t.begin() + 1, t.begin() + 1 + static_cast<long>(columns.size()));
      continue;
    }
    if (t.size() == 2 && starts_with(t[0], "NIC") && t[0].back() == ':') out.nic_names[t[0].substr(0, t[0].size() - 1)] = t[1];
  }
  if (columns.empty()) throw InputError(source, "header", "no \"GPU0 GPU1 ...\" header row found");
  return out;
}

}  // namespace

NodeDescription import_nvidia_smi_topo(const std::string& text, const std::string& source,
                                       const ImportOptions& opt) {
  const SmiTable table = read_smi_table(text, source);

  std::vector<std::string> gpu_cols, nic_cols;
  for (const std::string& c : table.columns) (starts_with(c, "GPU") ? gpu_cols : nic_cols).push_back(c);
  NodeDescription d;
  // No NIC column: the NIC driver is not loaded, or a VM's NIC is not a PCIe device the driver
  // shows. The node then has no NICs; in a cluster it gets the cluster's (with_cluster_nics).
  d.source = "nvidia-smi topo -m " + source + (nic_cols.empty() ? " (no NIC columns)" : "");
  for (const std::string& g : gpu_cols) d.vertices.push_back({g, VertexKind::gpu});
  for (const std::string& n : nic_cols)
    d.vertices.push_back({table.nic_names.count(n) ? table.nic_names.at(n) : n, VertexKind::nic});
  auto cell = [&](const std::string& row, size_t col) -> const std::string& {
    auto it = table.rows.find(row);
    if (it == table.rows.end())
      throw InputError(source, "row " + row, "missing (the header at line " + std::to_string(table.header_line) + " names it)");
    return it->second[col];
  };
  // NVLink counts between GPU pairs.
  const size_t G = gpu_cols.size();
  std::vector<std::vector<int>> nv(G, std::vector<int>(G, 0));
  bool complete = G > 1;
  for (size_t a = 0; a < G; ++a) {
    for (size_t b = 0; b < G; ++b) {
      if (a == b) continue;
      const std::string& c = cell(gpu_cols[a], b);
      if (starts_with(c, "NV")) {
        // NV<n>: n bonded NVLinks (NV12 on A100, NV18 on H100); nothing else may follow.
        const std::string n = c.substr(2);
        const bool digits = !n.empty() && n.size() <= 2 &&
                            n.find_first_not_of("0123456789") == std::string::npos;
        nv[a][b] = digits ? std::stoi(n) : 0;
        if (nv[a][b] <= 0)
          throw InputError(source, "row " + gpu_cols[a] + ", column " + gpu_cols[b],
                           "bad NVLink cell \"" + c + "\": must be NV<links>, links 1-99");
      } else if (nic_distance(c) < 0) {
        throw InputError(source, "row " + gpu_cols[a] + ", column " + gpu_cols[b], "unknown connection \"" + c + "\"");
      }
      complete = complete && nv[a][b] > 0 && nv[a][b] == nv[0][1];
    }
  }
  if (complete) {
    const auto sw = static_cast<int64_t>(d.vertices.size());
    d.vertices.push_back({"NVSwitch", VertexKind::nvswitch});
    for (size_t a = 0; a < G; ++a)
      d.links.push_back({static_cast<int64_t>(a), sw, LinkKind::nvlink, nv[0][1] * opt.nvlink_link_bytes_per_s, 0});
  } else {
    const auto pcie = static_cast<int64_t>(d.vertices.size());
    d.vertices.push_back({"PCIe", VertexKind::pcie});
    for (size_t a = 0; a < G; ++a) {
      d.links.push_back({static_cast<int64_t>(a), pcie, LinkKind::pcie, opt.pcie_bytes_per_s, 0});
      for (size_t b = a + 1; b < G; ++b)
        if (nv[a][b] > 0)
          d.links.push_back({static_cast<int64_t>(a), static_cast<int64_t>(b), LinkKind::nvlink,
                             nv[a][b] * opt.nvlink_link_bytes_per_s, 0});
    }
  }
  // Nearest NIC per GPU; ties to the least used.
  std::vector<int> used(nic_cols.size(), 0);
  for (size_t a = 0; a < G && !nic_cols.empty(); ++a) {
    size_t best = nic_cols.size();
    int best_d = 0;
    for (size_t n = 0; n < nic_cols.size(); ++n) {
      const std::string& c = cell(gpu_cols[a], G + n);
      const int dist = nic_distance(c);
      if (dist < 0)
        throw InputError(source, "row " + gpu_cols[a] + ", column " + nic_cols[n], "unknown connection \"" + c + "\"");
      if (best == nic_cols.size() || dist < best_d || (dist == best_d && used[n] < used[best])) {
        best = n;
        best_d = dist;
      }
    }
    ++used[best];
    d.gpu_nic.push_back(static_cast<int64_t>(best));
    d.links.push_back({static_cast<int64_t>(a), static_cast<int64_t>(G + best), LinkKind::pcie, opt.nic_bytes_per_s, 0});
  }
  return d;
}

}  // namespace parallax
