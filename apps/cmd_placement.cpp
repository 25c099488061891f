// parallax placement [plan flags] [--json]: the GPU and node of every rank under the plan's order
// string, every TP/DP/PP group, and a warning when a TP group crosses nodes.
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "parallax/topologies/placement.hpp"
#include "plan_options.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct PlacementArgs {
  PlanOptions plan;
  bool json = false;
};

std::string join(const std::vector<int64_t>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
  return s.str();
}

void run_placement(const PlacementArgs& a) {
  const Resolved r = resolve(a.plan);
  const PlanSpec& p = r.file.plan;
  const int64_t G = r.file.cluster.gpus_per_node;
  const Placement pl(p);
  auto nodes_of = [&](const std::vector<int64_t>& ranks) {
    std::set<int64_t> n;
    for (int64_t rank : ranks) n.insert(pl.gpu_of_rank(rank) / G);
    return n;
  };
  std::vector<std::string> warnings;
  const auto tp_groups = pl.groups(ParallelDim::tp);
  int64_t crossing = 0;
  for (const auto& g : tp_groups) {
    if (nodes_of(g).size() <= 1) continue;
    if (crossing++ == 0)
      warnings.push_back("TP group [" + join(g) + "] spans " + std::to_string(nodes_of(g).size()) +
                         " nodes: its all-reduces go over the network (TP innermost in --order keeps it in a node)");
  }
  if (crossing > 1) warnings.push_back(std::to_string(crossing) + " of " + std::to_string(tp_groups.size()) + " TP groups cross nodes");

  // cp groups (the K/V rings) only for a plan with context parallelism, so other output stays as it was.
  std::vector<std::pair<ParallelDim, const char*>> dims = {
      {ParallelDim::tp, "tp"}, {ParallelDim::dp, "dp"}, {ParallelDim::pp, "pp"}};
  if (p.cp > 1) dims.insert(dims.begin() + 1, {ParallelDim::cp, "cp"});
  if (a.json) {
    nlohmann::json j = {{"cluster", r.file.cluster.name}, {"order", p.order}, {"tp", p.tp},
                        {"dp", p.dp}, {"pp", p.pp}, {"warnings", warnings}};
    if (p.cp > 1) j["cp"] = p.cp;
    j["ranks"] = nlohmann::json::array();
    for (int64_t rank = 0; rank < pl.world_size(); ++rank) {
      const RankCoords c = pl.coords(rank);
      const int64_t gpu = pl.gpu_of_rank(rank);
      j["ranks"].push_back({{"rank", rank}, {"gpu", gpu}, {"node", gpu / G}, {"local_gpu", gpu % G},
                            {"tp", c.tp}, {"dp", c.dp}, {"pp", c.pp}});
      if (p.cp > 1) j["ranks"].back()["cp"] = c.cp;
    }
    for (const auto& [d, name] : dims) j["groups"][name] = pl.groups(d);
    std::cout << j.dump(2) << '\n';
    return;
  }
  for (const std::string& w : warnings) std::fprintf(stderr, "parallax: warning: %s\n", w.c_str());
  std::cout << "plan     tp=" << p.tp << (p.cp > 1 ? " cp=" + std::to_string(p.cp) : "") << " dp=" << p.dp
            << " pp=" << p.pp << " order=" << pl.order()
            << " on " << r.file.cluster.name << " (" << pl.world_size() << " ranks, " << G
            << " GPUs per node)\n\n";
  TextTable ranks({"rank", "gpu", "node", "local", "tp", "dp", "pp"});
  for (int64_t rank = 0; rank < pl.world_size(); ++rank) {
    const RankCoords c = pl.coords(rank);
    const int64_t gpu = pl.gpu_of_rank(rank);
    ranks.add_row({std::to_string(rank), std::to_string(gpu), std::to_string(gpu / G), std::to_string(gpu % G),
                   std::to_string(c.tp), std::to_string(c.dp), std::to_string(c.pp)});
  }
  std::cout << ranks.str();
  for (const auto& [d, name] : dims) {
    const auto groups = pl.groups(d);
    std::cout << '\n' << name << " groups (" << groups.size() << " of " << pl.size(d) << " ranks)\n";
    for (const auto& g : groups) {
      const auto n = nodes_of(g);
      std::cout << "  [" << join(g) << "]  nodes " << join(std::vector<int64_t>(n.begin(), n.end())) << '\n';
    }
  }
}

}  // namespace

void add_placement_command(CLI::App& app) {
  auto args = std::make_shared<PlacementArgs>();
  CLI::App* sub = app.add_subcommand("placement", "GPU and node of every rank, and every TP/DP/PP group");
  add_plan_options(*sub, args->plan);
  sub->add_flag("--json", args->json, "JSON output");
  sub->callback([args] { run_placement(*args); });
}

}  // namespace parallax::cli
