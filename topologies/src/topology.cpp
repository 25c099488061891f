#include "parallax/topologies/topology.hpp"

#include <algorithm>
#include <functional>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

size_t mix(size_t h, uint64_t x) {
  // boost::hash_combine's mixing step with a 64-bit constant.
  return h ^ (std::hash<uint64_t>{}(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

template <class T>
void push_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

std::vector<int64_t> to_gpus(const Placement& pl, const std::vector<int64_t>& ranks) {
  std::vector<int64_t> g;
  g.reserve(ranks.size());
  for (int64_t r : ranks) g.push_back(pl.gpu_of_rank(r));
  return g;
}

}  // namespace

double max_collective_time_s(const std::vector<GroupCost>& groups, Collective op, double bytes,
                             Algorithm algo) {
  double t = 0;
  for (const GroupCost& g : groups) t = std::max(t, collective_time_s(g, op, bytes, algo));
  return t;
}

double max_p2p_time_s(const std::vector<P2pCost>& costs, double bytes) {
  double t = 0;
  for (const P2pCost& c : costs) t = std::max(t, p2p_time_s(c, bytes));
  return t;
}

size_t Topology::PlanKeyHash::operator()(const PlanKey& k) const {
  size_t h = std::hash<std::string>{}(k.order);
  h = mix(h, static_cast<uint64_t>(k.tp));
  h = mix(h, static_cast<uint64_t>(k.cp));
  h = mix(h, static_cast<uint64_t>(k.dp));
  h = mix(h, static_cast<uint64_t>(k.ep));
  h = mix(h, static_cast<uint64_t>(k.etp));
  return mix(h, static_cast<uint64_t>(k.pp));
}

size_t Topology::GroupKeyHash::operator()(const std::vector<int64_t>& v) const {
  size_t h = v.size();
  for (int64_t x : v) h = mix(h, static_cast<uint64_t>(x));
  return h;
}

Topology::Topology(const ClusterSpec& c) : graph_(c) {}
Topology::Topology(const ClusterSpec& c, const NodeDescription& node) : graph_(c, node) {}

const PlanComm& Topology::plan_comm(const PlanSpec& p) const {
  const PlanKey key{p.tp, p.cp, p.dp, p.pp, p.ep, expert_tp(p), p.order};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  PlanComm pc = analyse(p);
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_.emplace(key, std::move(pc)).first->second;
}

PlanComm Topology::analyse(const PlanSpec& p) const {
  const Placement pl(p);
  if (pl.world_size() > graph_.gpus())
    throw InputError("plan", "$.plan",
                     "tp * dp * pp = " + std::to_string(pl.world_size()) + " GPUs exceed cluster " +
                         spec().name + " (" + std::to_string(graph_.gpus()) + " GPUs)");
  PlanComm out;
  out.tp_by_stage = stage_groups(pl, {ParallelDim::tp});
  // Gradients are reduced over the dp x cp ranks that hold the same weights.
  out.dp_by_stage = stage_groups(pl, {ParallelDim::cp, ParallelDim::dp});
  for (const auto& stage : out.tp_by_stage)
    for (const GroupCost& c : stage) out.tp_crosses_nodes = out.tp_crosses_nodes || c.nodes > 1;
  if (p.cp > 1) out.cp_ring_by_stage = cp_rings(pl);
  // Only expert-parallel plans need the expert groups (a dense plan has ep 1 and no etp).
  if (p.ep > 1 || p.etp > 0) {
    out.ep_by_stage = analyse_expert(pl, p, ExpertDim::ep);
    out.etp_by_stage = analyse_expert(pl, p, ExpertDim::etp);
    out.edp_by_stage = analyse_expert(pl, p, ExpertDim::edp);
  }
  if (p.pp > 1) {
    const PipelineLinks& links = pipeline_links(pl);
    out.p2p = links.p2p;
    out.embedding = links.embedding;
  }
  return out;
}

namespace {

// What a set of groups on a placement is a function of, so that analyses may be shared between
// plans: a dimension's groups are fixed by the world size and that dimension's size and stride
// (Placement::groups, expert_groups; gpu_of_rank is the identity), a group's stage by the pp
// size and stride. kind tells the analyses apart; extra holds the expert sizes.
std::vector<int64_t> shape_key(int64_t kind, const Placement& pl, std::initializer_list<ParallelDim> dims,
                               std::initializer_list<int64_t> extra = {}) {
  std::vector<int64_t> key{kind, pl.world_size(), pl.size(ParallelDim::pp), pl.stride(ParallelDim::pp)};
  for (ParallelDim d : dims) {
    key.push_back(pl.size(d));
    key.push_back(pl.stride(d));
  }
  key.insert(key.end(), extra);
  return key;
}

// The distinct costs of each stage's groups: every group of ranks on its GPUs, analysed together,
// each cost under the stage of the group's first rank.
std::vector<std::vector<GroupCost>> by_stage(const ClusterGraph& graph, const Placement& pl,
                                             const std::vector<std::vector<int64_t>>& rank_groups) {
  std::vector<std::vector<int64_t>> gpu_groups;
  gpu_groups.reserve(rank_groups.size());
  for (const auto& rg : rank_groups) gpu_groups.push_back(to_gpus(pl, rg));
  const std::vector<GroupCost> costs = analyse_groups(graph, gpu_groups);
  std::vector<std::vector<GroupCost>> out(static_cast<size_t>(pl.size(ParallelDim::pp)));
  for (size_t i = 0; i < costs.size(); ++i)
    push_unique(out[static_cast<size_t>(pl.coords(rank_groups[i].front()).pp)], costs[i]);
  return out;
}

// A group of one GPU in every stage: no ring, what analyse_groups gives a lone GPU.
std::vector<std::vector<GroupCost>> lone_gpus(int64_t pp) {
  return std::vector<std::vector<GroupCost>>(static_cast<size_t>(pp), std::vector<GroupCost>{GroupCost{}});
}

}  // namespace

template <class V, class F>
const V& Topology::memo(std::unordered_map<std::vector<int64_t>, V, GroupKeyHash>& cache,
                        std::vector<int64_t> key, F&& compute) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  V value = compute();
  std::lock_guard<std::mutex> lock(mutex_);
  return cache.emplace(std::move(key), std::move(value)).first->second;
}

std::vector<std::vector<GroupCost>> Topology::stage_groups(const Placement& pl,
                                                           std::initializer_list<ParallelDim> dims) const {
  int64_t size = 1;
  for (ParallelDim d : dims) size *= pl.size(d);
  const int64_t pp = pl.size(ParallelDim::pp);
  if (size == 1) return lone_gpus(pp);
  return memo(stage_groups_, shape_key(0, pl, dims), [&] {
    return by_stage(graph_, pl, dims.size() == 1 ? pl.groups(*dims.begin()) : pl.groups(dims));
  });
}

const std::vector<std::vector<P2pCost>>& Topology::cp_rings(const Placement& pl) const {
  return memo(cp_rings_, shape_key(1, pl, {ParallelDim::cp}), [&] {
    const int64_t pp = pl.size(ParallelDim::pp);
    std::vector<std::vector<std::pair<int64_t, int64_t>>> sends(static_cast<size_t>(pp));
    for (const auto& ring : pl.groups(ParallelDim::cp)) {
      auto& stage = sends[static_cast<size_t>(pl.coords(ring.front()).pp)];
      for (size_t i = 0; i < ring.size(); ++i)
        stage.emplace_back(pl.gpu_of_rank(ring[i]), pl.gpu_of_rank(ring[(i + 1) % ring.size()]));
    }
    std::vector<std::vector<P2pCost>> out(static_cast<size_t>(pp));
    for (size_t k = 0; k < sends.size(); ++k)
      for (const P2pCost& c : analyse_p2p(graph_, sends[k])) push_unique(out[k], c);
    return out;
  });
}

const Topology::PipelineLinks& Topology::pipeline_links(const Placement& pl) const {
  return memo(pipelines_, shape_key(2, pl, {}), [&] {
    PipelineLinks out;
    const int64_t pp = pl.size(ParallelDim::pp);
    const auto pipelines = pl.groups(ParallelDim::pp);
    for (int64_t k = 0; k + 1 < pp; ++k) {
      std::vector<std::pair<int64_t, int64_t>> transfers;
      for (const auto& pipe : pipelines)
        transfers.emplace_back(pl.gpu_of_rank(pipe[static_cast<size_t>(k)]),
                               pl.gpu_of_rank(pipe[static_cast<size_t>(k + 1)]));
      for (const P2pCost& c : analyse_p2p(graph_, transfers)) push_unique(out.p2p, c);
    }
    std::vector<std::vector<int64_t>> pairs;
    for (const auto& pipe : pipelines)
      pairs.push_back({pl.gpu_of_rank(pipe.front()), pl.gpu_of_rank(pipe.back())});
    for (const GroupCost& c : analyse_groups(graph_, pairs)) push_unique(out.embedding, c);
    return out;
  });
}

std::vector<std::vector<GroupCost>> Topology::analyse_expert(const Placement& pl, const PlanSpec& p,
                                                             ExpertDim d) const {
  const int64_t etp = expert_tp(p);
  if ((p.tp * p.cp * p.dp) % (etp * p.ep) != 0)
    throw InputError("plan", "$.plan.ep", "etp * ep must divide tp * cp * dp");  // validate_plan's rule
  const int64_t size = d == ExpertDim::etp ? etp : d == ExpertDim::ep ? p.ep : p.tp * p.cp * p.dp / (etp * p.ep);
  if (size == 1) return lone_gpus(p.pp);
  return memo(stage_groups_, shape_key(3, pl, {}, {etp, p.ep, static_cast<int64_t>(d)}), [&] {
    return by_stage(graph_, pl, expert_groups(pl, etp, p.ep, d));
  });
}

GroupCost Topology::group_cost(const std::vector<int64_t>& gpus) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = groups_.find(gpus);
    if (it != groups_.end()) return it->second;
  }
  for (int64_t gpu : gpus)
    if (gpu < 0 || gpu >= graph_.gpus())
      throw InputError("command line", "--ranks",
                       "rank " + std::to_string(gpu) + " is outside cluster " + spec().name + " (" +
                           std::to_string(graph_.gpus()) + " GPUs: 0-" + std::to_string(graph_.gpus() - 1) + ")");
  const std::vector<std::vector<int64_t>> one{gpus};
  const GroupCost c = analyse_groups(graph_, one).front();
  std::lock_guard<std::mutex> lock(mutex_);
  groups_.emplace(gpus, c);
  return c;
}

P2pCost Topology::p2p_cost(int64_t src_gpu, int64_t dst_gpu) const {
  for (int64_t gpu : {src_gpu, dst_gpu})
    if (gpu < 0 || gpu >= graph_.gpus())
      throw InputError("command line", "--ranks",
                       "rank " + std::to_string(gpu) + " is outside cluster " + spec().name + " (" +
                           std::to_string(graph_.gpus()) + " GPUs)");
  const std::vector<std::pair<int64_t, int64_t>> t{{src_gpu, dst_gpu}};
  return analyse_p2p(graph_, t).front();
}

}  // namespace parallax
