#include "parallax/executor/comm/groups.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <sstream>
#include <vector>

namespace parallax::exec {

namespace {

// The plan's order with cp in it (right after tp when the order leaves it out).
std::vector<std::string> order_parts(const PlanSpec& p) {
  std::vector<std::string> parts;
  std::stringstream in(placement_order(p.order, p.cp));
  std::string s;
  while (std::getline(in, s, '-')) parts.push_back(s);
  if (p.cp == 1) std::erase(parts, std::string("cp"));
  return parts;
}

int64_t size_of(const PlanSpec& p, const std::string& d) {
  return d == "tp" ? p.tp : d == "pp" ? p.pp : d == "cp" ? p.cp : p.dp;
}

int64_t& coord_of(RankCoords& c, const std::string& d) {
  return d == "tp" ? c.tp : d == "pp" ? c.pp : d == "cp" ? c.cp : c.dp;
}

Group split(MPI_Comm world, int color, int key, const std::string& name) {
  Group g;
  g.name = name;
  MPI_Comm_split(world, color, key, &g.comm);
  if (g.comm != MPI_COMM_NULL) {
    MPI_Comm_rank(g.comm, &g.rank);
    MPI_Comm_size(g.comm, &g.size);
  }
  return g;
}

}  // namespace

RankCoords rank_coords(const PlanSpec& p, int64_t rank) {
  RankCoords c;
  for (const auto& d : order_parts(p)) {
    coord_of(c, d) = rank % size_of(p, d);
    rank /= size_of(p, d);
  }
  return c;
}

int64_t world_rank_of(const PlanSpec& p, const RankCoords& c) {
  const auto parts = order_parts(p);
  int64_t r = 0;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    RankCoords cc = c;
    r = r * size_of(p, *it) + coord_of(cc, *it);
  }
  return r;
}

ProcessGroups make_process_groups(const PlanSpec& p, bool tied_embeddings) {
  ProcessGroups g;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g.world = {MPI_COMM_WORLD, rank, size, "world"};
  g.coords = rank_coords(p, rank);
  const RankCoords& c = g.coords;
  // A group's members share every coordinate but its own: the colour is the world rank of the
  // member whose own coordinates are 0.
  auto color = [&](std::initializer_list<int64_t RankCoords::*> own) {
    RankCoords base = c;
    for (auto m : own) base.*m = 0;
    return static_cast<int>(world_rank_of(p, base));
  };
  g.tp = split(MPI_COMM_WORLD, color({&RankCoords::tp}), static_cast<int>(c.tp), "tp");
  g.pp = split(MPI_COMM_WORLD, color({&RankCoords::pp}), static_cast<int>(c.pp), "pp");
  g.cp = split(MPI_COMM_WORLD, color({&RankCoords::cp}), static_cast<int>(c.cp), "cp");
  const int64_t idx = c.dp * p.cp + c.cp;  // the rank's place among the stage's dp x cp ranks
  g.dp = split(MPI_COMM_WORLD, color({&RankCoords::dp, &RankCoords::cp}), static_cast<int>(idx),
               "dp");
  if (p.ep > 1 && expert_tp(p) != p.tp)
    throw std::logic_error("process groups: the executor's expert groups need expert_tp = tp");
  const int64_t ep = std::max<int64_t>(p.ep, 1);
  const int64_t stage_tp = c.pp * p.tp + c.tp;  // one (pp, tp) pair
  g.ep = split(MPI_COMM_WORLD, static_cast<int>(stage_tp * (p.dp * p.cp / ep) + idx / ep),
               static_cast<int>(idx % ep), "ep");
  g.edp = split(MPI_COMM_WORLD, static_cast<int>(stage_tp * ep + idx % ep),
                static_cast<int>(idx / ep), "edp");
  // Untied output embeddings have no copy to keep in sync: no group (Megatron-LM likewise).
  const bool on_edge = tied_embeddings && p.pp > 1 && (c.pp == 0 || c.pp == p.pp - 1);
  g.embedding = split(MPI_COMM_WORLD, on_edge ? color({&RankCoords::pp}) : MPI_UNDEFINED,
                      static_cast<int>(c.pp), "embedding");
  return g;
}

void free_process_groups(ProcessGroups& g) {
  for (Group* x : std::array<Group*, 7>{&g.tp, &g.pp, &g.cp, &g.dp, &g.ep, &g.edp, &g.embedding})
    if (x->comm != MPI_COMM_NULL) MPI_Comm_free(&x->comm);
}

}  // namespace parallax::exec
