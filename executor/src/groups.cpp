#include "parallax/executor/groups.hpp"

#include <array>
#include <sstream>
#include <vector>

namespace parallax::exec {

namespace {

std::vector<std::string> order_parts(const PlanSpec& p) {
  std::vector<std::string> parts;
  std::stringstream in(p.order);
  std::string s;
  while (std::getline(in, s, '-'))
    if (s != "cp") parts.push_back(s);
  return parts;
}

int64_t size_of(const PlanSpec& p, const std::string& d) {
  return d == "tp" ? p.tp : d == "pp" ? p.pp : p.dp;
}

int64_t& coord_of(RankCoords& c, const std::string& d) {
  return d == "tp" ? c.tp : d == "pp" ? c.pp : c.dp;
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
  const auto& c = g.coords;
  auto color = [&](int64_t a, int64_t b) { return static_cast<int>(a * 1'000'000 + b); };
  // Members of a group share the other two coordinates; they are ordered by their own.
  g.tp = split(MPI_COMM_WORLD, color(c.pp, c.dp), static_cast<int>(c.tp), "tp");
  g.pp = split(MPI_COMM_WORLD, color(c.tp, c.dp), static_cast<int>(c.pp), "pp");
  g.dp = split(MPI_COMM_WORLD, color(c.tp, c.pp), static_cast<int>(c.dp), "dp");
  // Untied output embeddings have no copy to keep in sync: no group (Megatron-LM likewise).
  const bool on_edge = tied_embeddings && p.pp > 1 && (c.pp == 0 || c.pp == p.pp - 1);
  g.embedding = split(MPI_COMM_WORLD, on_edge ? color(c.tp, c.dp) : MPI_UNDEFINED,
                      static_cast<int>(c.pp), "embedding");
  return g;
}

void free_process_groups(ProcessGroups& g) {
  for (Group* x : std::array<Group*, 4>{&g.tp, &g.pp, &g.dp, &g.embedding})
    if (x->comm != MPI_COMM_NULL) MPI_Comm_free(&x->comm);
}

}  // namespace parallax::exec
