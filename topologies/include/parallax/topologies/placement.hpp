#pragma once
// Rank placement: (tp, cp, dp, pp) coordinates of every rank by an order string, innermost
// (fastest-varying) first, as Megatron-LM's RankGenerator does. With order "tp-dp-pp":
//   rank = tp_i + tp * (dp_i + dp * pp_i),
// and rank r runs on GPU r (GPUs numbered node by node), so TP groups stay inside a node when
// tp divides the GPUs per node. cp may be left out of the order: it then sits right after tp
// (Megatron-Core's default order tp-cp-ep-dp-pp), so "tp-dp-pp" places as "tp-cp-dp-pp".
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class ParallelDim { tp, cp, dp, pp };
const char* to_string(ParallelDim d);

struct RankCoords {
  int64_t tp = 0, cp = 0, dp = 0, pp = 0;
};

class Placement {
 public:
  // Throws InputError(source "command line", path "--order") on a bad order string.
  Placement(int64_t tp, int64_t cp, int64_t dp, int64_t pp, const std::string& order);
  explicit Placement(const PlanSpec& p);

  int64_t world_size() const { return size(ParallelDim::tp) * size(ParallelDim::cp) *
                                      size(ParallelDim::dp) * size(ParallelDim::pp); }
  int64_t size(ParallelDim d) const { return sizes_[static_cast<size_t>(d)]; }
  int64_t stride(ParallelDim d) const { return strides_[static_cast<size_t>(d)]; }
  const std::string& order() const { return order_; }

  RankCoords coords(int64_t rank) const;
  int64_t rank(const RankCoords& c) const;
  int64_t gpu_of_rank(int64_t rank) const { return rank; }
  // Every group of one dimension: ranks ordered by that coordinate; groups ordered by first rank.
  std::vector<std::vector<int64_t>> groups(ParallelDim d) const;
  // The group of dimension d that contains rank r.
  std::vector<int64_t> group_of(ParallelDim d, int64_t rank) const;
  // Groups over several dimensions at once (the first varying fastest), e.g. {cp, dp}: the ranks
  // that share every other coordinate (Megatron-Core's data-parallel group with context
  // parallelism, over which gradients are reduced).
  std::vector<std::vector<int64_t>> groups(std::initializer_list<ParallelDim> dims) const;
  std::vector<int64_t> group_of(std::initializer_list<ParallelDim> dims, int64_t rank) const;

 private:
  std::array<int64_t, 4> sizes_{};
  std::array<int64_t, 4> strides_{};
  std::string order_;
};

// Expert layers (mixture-of-experts models) re-split each pipeline stage's tp * cp * dp ranks as
// etp * ep * edp, Megatron-Core's MoE parallel folding (megatron/core/parallel_state.py, the
// expert RankGenerator, order "tp-ep-dp-pp"): the stage's ranks in ascending order, expert tensor
// parallelism fastest, then expert parallelism, then expert data parallelism. Megatron-Core's
// orders put ep right after tp and cp (tp-cp-ep-dp-pp, tp-cp-ep-pp-dp): in both its expert
// ranks of one stage are numbered so, and the order string need not name ep.
enum class ExpertDim { etp, ep, edp };
// Every group of one expert dimension on every stage, ranks ordered by that coordinate.
std::vector<std::vector<int64_t>> expert_groups(const Placement& pl, int64_t etp, int64_t ep,
                                                ExpertDim d);

}  // namespace parallax
