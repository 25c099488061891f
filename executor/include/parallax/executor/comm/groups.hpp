#pragma once
// Rank layout and process groups (Megatron-LM's formula, TP fastest-varying by default): with
// order "a-b-c" (innermost first) and sizes n_a, n_b, n_c,
//   world_rank = r_a + n_a * (r_b + n_b * r_c);
// cp, when the order leaves it out, right after tp (placement_order).
// Groups are passed explicitly to everything that communicates; there are no global groups.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "parallax/core/plan_spec.hpp"

namespace parallax::exec {

struct RankCoords {
  int64_t tp = 0, pp = 0, dp = 0, cp = 0;
};

// Coordinates of world rank `rank` under the plan's order string.
RankCoords rank_coords(const PlanSpec& p, int64_t rank);
// The world rank at the given coordinates.
int64_t world_rank_of(const PlanSpec& p, const RankCoords& c);

struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string name;
};

struct ProcessGroups {
  Group world, tp, pp;
  // cp: the ranks that split one sequence (context parallelism). dp: every rank that holds the
  // same parameters, the dp x cp ranks that reduce gradients and shard ZeRO-1's optimizer state
  // together (Megatron-Core's data-parallel group with context parallelism), ordered by (dp, cp);
  // the dp group of the plan when cp = 1.
  Group cp, dp;
  // Expert parallelism (Megatron-Core's parallel folding with expert_tp = tp): the dp x cp ranks
  // of g.dp, numbered i = dp cp_size + cp, re-split as i = ep_rank + ep edp_rank. ep: the ranks
  // that exchange tokens (same tp, pp and edp rank); edp: the ranks that hold the same experts
  // and reduce their gradients (same tp, pp and ep rank). Groups of one without a plan ep > 1.
  Group ep, edp;
  Group embedding;  // first and last pipeline rank (tied word embeddings with pp > 1 only)
  RankCoords coords;
};

// Collective over MPI_COMM_WORLD: every rank must call it.
ProcessGroups make_process_groups(const PlanSpec& p, bool tied_embeddings);
void free_process_groups(ProcessGroups& g);

// The groups of make_process_groups, freed when this goes out of scope (a throw included), so a
// run that ends in an error leaves no communicator behind. Not copyable or movable: trainers keep
// a reference to the groups.
class OwnedProcessGroups {
 public:
  OwnedProcessGroups(const PlanSpec& p, bool tied_embeddings)
      : groups_(make_process_groups(p, tied_embeddings)) {}
  ~OwnedProcessGroups() { free_process_groups(groups_); }
  OwnedProcessGroups(const OwnedProcessGroups&) = delete;
  OwnedProcessGroups& operator=(const OwnedProcessGroups&) = delete;
  ProcessGroups& get() { return groups_; }

 private:
  ProcessGroups groups_;
};

}  // namespace parallax::exec
