// parallax topo show|collective|import: the cluster graph, the cost of one collective on a
// concrete group of GPUs (nccl-tests terms), and node descriptions from NCCL / nvidia-smi.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/topologies/import.hpp"
#include "parallax/topologies/topology.hpp"
#include "text_table.hpp"
#include "topo_values.hpp"

namespace parallax::cli {
namespace {

struct TopoArgs {
  std::string cluster;
  std::string node;  // node description JSON replacing the cluster's default node
  std::string op = "all_reduce";
  std::string algo = "auto";
  std::string ranks;
  std::string bytes = "1G";
  std::string file;
  std::string format = "auto";
  std::string groups = "1";        // concurrent copies of the group
  std::string group_stride = "0";  // rank offset between copies
  bool json = false;
};

Topology make_topology(const TopoArgs& a) {
  const ClusterSpec c = load_cluster(a.cluster);
  if (a.node.empty()) return Topology(c);
  const NodeDescription d = with_cluster_nics(load_node_description(a.node), c);
  check_node_fits(d, c, a.node);
  return Topology(c, d);
}

std::string gbps(double bytes_per_s) { return fmt(bytes_per_s / 1e9, 1); }

void run_show(const TopoArgs& a) {
  const Topology t = make_topology(a);
  const ClusterGraph& g = t.graph();
  const ClusterSpec& c = t.spec();
  std::map<VertexKind, int64_t> counts;
  for (auto v : boost::make_iterator_range(boost::vertices(g.graph()))) ++counts[g.graph()[v].kind];
  const std::vector<TierSummary> tiers = g.tiers();
  if (a.json) {
    nlohmann::json j = {{"cluster", c.name},
                        {"nodes", c.nodes},
                        {"gpus_per_node", c.gpus_per_node},
                        {"gpus", c.total_gpus()},
                        {"directed_links", g.link_count()}};
    for (const auto& [k, n] : counts) j["vertices"][to_string(k)] = n;
    for (const TierSummary& s : tiers)
      j["tiers"].push_back({{"tier", s.name},
                            {"switches", s.switches},
                            {"down_gbps", s.down_bandwidth_bytes_per_s / 1e9},
                            {"up_gbps", s.up_bandwidth_bytes_per_s / 1e9},
                            {"bisection_gbps", std::min(s.down_bandwidth_bytes_per_s, s.up_bandwidth_bytes_per_s > 0 ? s.up_bandwidth_bytes_per_s : s.down_bandwidth_bytes_per_s) / 2e9}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << "cluster  " << c.name << ": " << c.nodes << " nodes x " << c.gpus_per_node << ' '
            << c.gpu.name << " = " << c.total_gpus() << " GPUs\n";
  std::cout << "vertices";
  for (const auto& [k, n] : counts) std::cout << "  " << to_string(k) << ' ' << n;
  std::cout << "\nlinks    " << g.link_count() << " directed (bandwidth per direction, effective)\n";
  std::cout << "network  " << c.inter.kind << ", " << c.inter.nics_per_node << " NICs/node at "
            << gbps(c.inter.nic_effective_bandwidth_bytes_per_s) << " GB/s, "
            << (c.inter.rail_optimized ? "rail-optimised" : "not rail-optimised") << ", "
            << c.inter.tiers << " tiers of radix " << c.inter.switch_radix << ", oversubscription "
            << fmt(c.inter.oversubscription, 2) << "\n\n";
  // Bisection per tier: cutting the cluster in half at that tier leaves half of the smaller of
  // its down and up bandwidth between the halves (the top tier: half of what enters it).
  TextTable table({"tier", "switches", "down GB/s", "up GB/s", "bisection GB/s"});
  for (const TierSummary& s : tiers) {
    const double through = s.up_bandwidth_bytes_per_s > 0
                               ? std::min(s.down_bandwidth_bytes_per_s, s.up_bandwidth_bytes_per_s)
                               : s.down_bandwidth_bytes_per_s;
    table.add_row({s.name, std::to_string(s.switches), gbps(s.down_bandwidth_bytes_per_s),
                   gbps(s.up_bandwidth_bytes_per_s), gbps(through / 2)});
  }
  std::cout << table.str();
}

Collective parse_op(const std::string& s) {
  for (Collective op : {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather,
                        Collective::broadcast, Collective::send_recv})
    if (s == to_string(op)) return op;
  throw InputError("command line", "--op",
                   "must be all_reduce, reduce_scatter, all_gather, broadcast or send_recv (got \"" + s + "\")");
}

Algorithm parse_algo(const std::string& s) {
  for (Algorithm al : {Algorithm::ring, Algorithm::tree, Algorithm::automatic})
    if (s == to_string(al)) return al;
  throw InputError("command line", "--algo", "must be ring, tree or auto (got \"" + s + "\")");
}

void run_collective(const TopoArgs& a) {
  const Collective op = parse_op(a.op);
  const Algorithm algo = parse_algo(a.algo);
  if (a.ranks.empty()) throw InputError("command line", "--ranks", "is required (e.g. 0-63)");
  const std::vector<int64_t> ranks = parse_rank_list("--ranks", a.ranks);
  const double bytes = parse_bytes("--bytes", a.bytes);
  const Topology t = make_topology(a);
  double time_s = 0;
  std::string used = "p2p";
  int64_t nodes = 1, per_node = 1;
  if (op == Collective::send_recv) {
    if (ranks.size() != 2)
      throw InputError("command line", "--ranks", "send_recv takes exactly 2 ranks, sender first (got " +
                                                      std::to_string(ranks.size()) + ")");
    time_s = p2p_time_s(t.p2p_cost(ranks[0], ranks[1]), bytes);
    nodes = t.graph().node_of(ranks[0]) == t.graph().node_of(ranks[1]) ? 1 : 2;
  } else {
    if (ranks.size() < 2) throw InputError("command line", "--ranks", "a collective needs at least 2 ranks");
    // With --groups N, N copies of the group (ranks shifted by i * --group-stride) run at once
    // and share links; the slowest copy is reported.
    const int64_t copies = parse_int("--groups", a.groups, 1, 1000000);
    const int64_t stride = parse_int("--group-stride", a.group_stride, 0, 100000000);
    if (copies > 1 && stride == 0)
      throw InputError("command line", "--group-stride", "must be > 0 with --groups > 1 (got 0)");
    GroupCost g = t.group_cost(ranks);
    if (copies > 1) {
      std::vector<std::vector<int64_t>> all;
      for (int64_t i = 0; i < copies; ++i) {
        std::vector<int64_t> shifted;
        for (int64_t r : ranks) shifted.push_back(r + i * stride);
        t.group_cost(shifted);  // checks the ranks against the cluster
        all.push_back(std::move(shifted));
      }
      double worst = -1;
      for (const GroupCost& c : analyse_groups(t.graph(), all)) {
        const double tc = collective_time_s(c, op, bytes, algo);
        if (tc > worst) {
          worst = tc;
          g = c;
        }
      }
    }
    nodes = g.nodes;
    per_node = g.per_node;
    time_s = collective_time_s(g, op, bytes, algo);
    used = to_string(algo);
    if (algo == Algorithm::automatic)
      used = op == Collective::all_reduce && g.nodes > 1 &&
                     collective_time_s(g, op, bytes, Algorithm::tree) < collective_time_s(g, op, bytes, Algorithm::ring)
                 ? "tree"
                 : "ring";
  }
  const double algbw = bytes / time_s;
  const double busbw = algbw * busbw_factor(op, static_cast<int64_t>(ranks.size()));
  if (a.json) {
    const nlohmann::json j = {{"cluster", t.spec().name}, {"op", a.op},       {"algorithm", used},
                              {"ranks", ranks.size()},    {"nodes", nodes},   {"per_node", per_node},
                              {"concurrent_groups", parse_int("--groups", a.groups, 1, 1000000)},
                              {"bytes", bytes},           {"time_s", time_s}, {"algbw_gbps", algbw / 1e9},
                              {"busbw_gbps", busbw / 1e9}};
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << "cluster  " << t.spec().name << "\ngroup    " << ranks.size() << " ranks on " << nodes
            << " node(s), up to " << per_node << " per node\n"
            << "op       " << a.op << " (" << used << ")\n\n";
  TextTable table({"size (B)", "time", "algbw (GB/s)", "busbw (GB/s)"});
  table.add_row({fmt(bytes, 0), fmt_seconds(time_s), fmt(algbw / 1e9, 2), fmt(busbw / 1e9, 2)});
  std::cout << table.str();
}

void run_import(const TopoArgs& a) {
  std::ifstream in(a.file);
  if (!in) throw InputError(a.file, "$", "cannot read file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::string format = a.format;
  if (format == "auto") format = text.find("<system") != std::string::npos ? "nccl-xml" : "nvidia-smi";
  const NodeDescription d = format == "nccl-xml" ? import_nccl_topology_xml(text, a.file)
                                                 : import_nvidia_smi_topo(text, a.file);
  std::cout << to_json(d).dump(2) << '\n';
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto args = std::make_shared<TopoArgs>();
  CLI::App* topo = app.add_subcommand("topo", "the cluster as a graph: summary, collective cost, import");
  topo->require_subcommand(1);

  CLI::App* show = topo->add_subcommand("show", "GPUs, links and bandwidth per switch tier");
  show->add_option("cluster", args->cluster, "cluster preset name or JSON file")->required();
  show->add_option("--node", args->node, "node description JSON (from `topo import`)");
  show->add_flag("--json", args->json, "JSON output");
  show->callback([args] { run_show(*args); });

  CLI::App* coll = topo->add_subcommand("collective", "time, algbw and busbw of one collective");
  coll->add_option("cluster", args->cluster, "cluster preset name or JSON file")->required();
  coll->add_option("--op", args->op, "all_reduce|reduce_scatter|all_gather|broadcast|send_recv")
      ->capture_default_str();
  coll->add_option("--algo", args->algo, "ring|tree|auto (tree: all_reduce only)")->capture_default_str();
  coll->add_option("--ranks", args->ranks, "GPUs of the group in ring order, e.g. 0-63 or 0,8,16");
  coll->add_option("--bytes", args->bytes, "nccl-tests size, K/M/G = powers of 1024")->capture_default_str();
  coll->add_option("--node", args->node, "node description JSON (from `topo import`)");
  coll->add_option("--groups", args->groups, "concurrent copies of the group sharing links")->capture_default_str();
  coll->add_option("--group-stride", args->group_stride, "rank offset between the copies")->capture_default_str();
  coll->add_flag("--json", args->json, "JSON output (time_s, algbw_gbps, busbw_gbps; GB = 1e9 bytes)");
  coll->callback([args] { run_collective(*args); });

  CLI::App* imp = topo->add_subcommand("import", "node description JSON from an NCCL topology dump or nvidia-smi topo -m");
  imp->add_option("file", args->file, "NCCL_TOPO_DUMP_FILE XML or `nvidia-smi topo -m` output")->required();
  imp->add_option("--format", args->format, "auto|nccl-xml|nvidia-smi")
      ->check(CLI::IsMember({"auto", "nccl-xml", "nvidia-smi"}))
      ->capture_default_str();
  imp->callback([args] { run_import(*args); });
}

}  // namespace parallax::cli
