#pragma once
// A cluster graph plus memoised analyses: the first question about a plan's groups (or a GPU
// group) routes and shares links once; later questions are a hash lookup and a closed form.
// Thread-safe: the caches are guarded by a mutex; returned references stay valid for the
// Topology's lifetime (node-based maps).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "parallax/core/plan_spec.hpp"
#include "parallax/topologies/cluster_graph.hpp"
#include "parallax/topologies/collectives.hpp"
#include "parallax/topologies/placement.hpp"

namespace parallax {

// Costs of every group a plan communicates in, with all groups of a kind running at once.
struct PlanComm {
  // Per pipeline stage, the distinct costs of its TP and DP groups (the slowest one bounds it).
  // With context parallelism the DP groups are the dp x cp ranks that reduce gradients together.
  std::vector<std::vector<GroupCost>> tp_by_stage;
  std::vector<std::vector<GroupCost>> dp_by_stage;
  // Per pipeline stage, the distinct costs of one step of the context-parallel ring: every cp
  // rank sending to the next at once, all cp groups of the stage together (empty when cp = 1).
  std::vector<std::vector<P2pCost>> cp_ring_by_stage;
  // Mixture-of-experts models, per pipeline stage (empty for dense models): the expert-parallel
  // groups (token all-to-all), the expert tensor-parallel groups and the expert data-parallel
  // groups (expert gradients), each analysed with all groups of its kind at once.
  std::vector<std::vector<GroupCost>> ep_by_stage;
  std::vector<std::vector<GroupCost>> etp_by_stage;
  std::vector<std::vector<GroupCost>> edp_by_stage;
  // Distinct costs of the stage-to-stage transfers (all pipelines' stage k -> k+1 at once).
  std::vector<P2pCost> p2p;
  // Distinct costs of the first-last stage pairs (tied-embedding gradient all-reduce).
  std::vector<GroupCost> embedding;
  // A TP group spans more than one node.
  bool tp_crosses_nodes = false;
};

// Slowest of several groups for one collective.
double max_collective_time_s(const std::vector<GroupCost>& groups, Collective op, double bytes,
                             Algorithm algo = Algorithm::automatic);
double max_p2p_time_s(const std::vector<P2pCost>& costs, double bytes);

class Topology {
 public:
  explicit Topology(const ClusterSpec& c);
  Topology(const ClusterSpec& c, const NodeDescription& node);

  const ClusterGraph& graph() const { return graph_; }
  const ClusterSpec& spec() const { return graph_.spec(); }

  // Throws InputError when the plan needs more GPUs than the cluster has.
  const PlanComm& plan_comm(const PlanSpec& p) const;
  // One group running alone (no other group shares its links); GPUs in ring order.
  GroupCost group_cost(const std::vector<int64_t>& gpus) const;
  P2pCost p2p_cost(int64_t src_gpu, int64_t dst_gpu) const;

 private:
  struct PlanKey {
    int64_t tp, cp, dp, pp, ep, etp;
    std::string order;
    bool operator==(const PlanKey&) const = default;
  };
  struct PlanKeyHash {
    size_t operator()(const PlanKey& k) const;
  };
  struct GroupKeyHash {
    size_t operator()(const std::vector<int64_t>& v) const;
  };

  PlanComm analyse(const PlanSpec& p) const;
  // The analyses a PlanComm is made of, each memoised on what its groups are a function of (the
  // world size and the sizes and strides of the dimensions involved): plans that differ along
  // other dimensions share them (on 16,384 GPUs in tp-cp-dp-pp order, tp 8 has the same TP groups
  // whatever cp, dp and pp are). Each stage's distinct group costs of the dimensions `dims`:
  std::vector<std::vector<GroupCost>> stage_groups(const Placement& pl,
                                                   std::initializer_list<ParallelDim> dims) const;
  // Per stage, the distinct costs of one step of the context-parallel ring.
  const std::vector<std::vector<P2pCost>>& cp_rings(const Placement& pl) const;
  // The stage-to-stage transfers and the first-last stage pairs (PlanComm::p2p, embedding).
  struct PipelineLinks {
    std::vector<P2pCost> p2p;
    std::vector<GroupCost> embedding;
  };
  const PipelineLinks& pipeline_links(const Placement& pl) const;
  // Costs of each stage's groups of one expert dimension.
  std::vector<std::vector<GroupCost>> analyse_expert(const Placement& pl, const PlanSpec& p,
                                                     ExpertDim d) const;
  template <class V, class F>
  const V& memo(std::unordered_map<std::vector<int64_t>, V, GroupKeyHash>& cache,
                std::vector<int64_t> key, F&& compute) const;

  ClusterGraph graph_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<PlanKey, PlanComm, PlanKeyHash> plans_;
  mutable std::unordered_map<std::vector<int64_t>, GroupCost, GroupKeyHash> groups_;
  // The memoised analyses, keyed by their group shapes (stage_groups, analyse_expert, cp_rings,
  // pipeline_links).
  mutable std::unordered_map<std::vector<int64_t>, std::vector<std::vector<GroupCost>>, GroupKeyHash> stage_groups_;
  mutable std::unordered_map<std::vector<int64_t>, std::vector<std::vector<P2pCost>>, GroupKeyHash> cp_rings_;
  mutable std::unordered_map<std::vector<int64_t>, PipelineLinks, GroupKeyHash> pipelines_;
};

}  // namespace parallax
