#pragma once
// How a job is split over GPUs. Invariants (checked by validate_plan):
//   tp * cp * pp * dp == GPUs used;  micro_batch * num_micro_batches * dp == global batch.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved };
// How a mixture-of-experts layer moves its tokens to the expert-parallel ranks (Megatron-Core's
// --moe-token-dispatcher-type and --moe-flex-dispatcher-backend):
//   alltoall  MoEAlltoAllTokenDispatcher: each token's row copied once per chosen expert, then one
//             NCCL all-to-all-v over the ep group (a rank holding two of its experts gets it twice);
//   deepep    flex dispatcher with DeepEP, hybridep flex dispatcher with HybridEP: a token crosses
//             the network once per node that holds any of its experts and reaches each rank that
//             needs it once, over NVLink from that node's receiving rank (DeepEP csrc/kernels/
//             internode.cu, SourceMeta: one RDMA copy per node with a bitmask of its NVLink ranks).
enum class MoeDispatcher { alltoall, deepep, hybridep };
// Every dispatcher, in the enum's order: what moe_dispatcher_from, the readers and the tests loop over.
inline constexpr std::array<MoeDispatcher, 3> kMoeDispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep,
                                                                   MoeDispatcher::hybridep};

// Every recompute mode and schedule, in the enums' order: what the readers accept.
inline constexpr std::array<Recompute, 3> kRecomputes = {Recompute::none, Recompute::selective, Recompute::full};
inline constexpr std::array<Schedule, 3> kSchedules = {Schedule::gpipe, Schedule::one_f_one_b,
                                                       Schedule::interleaved};

struct PlanSpec {
  int64_t tp = 1;
  // Context parallelism: the sequence of every micro-batch split over cp ranks, causally load
  // balanced (rank i holds chunks i and 2cp-1-i of 2cp), keys and values passed round a ring.
  int64_t cp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  // Expert parallelism (mixture-of-experts models only; Megatron-Core's MoE parallel folding): the
  // expert layers re-split each pipeline stage's tp * cp * dp ranks as etp * ep * edp. ep ranks
  // each hold num_experts / ep routed experts and exchange tokens by all-to-all; every expert's
  // FFN is split over etp ranks (--expert-tensor-parallel-size; 0 = tp, Megatron-Core's default);
  // the edp = tp * cp * dp / (etp * ep) ranks that hold the same experts reduce their gradients.
  int64_t ep = 1;
  int64_t etp = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;  // with ep > 1
  int64_t vpp = 1;  // virtual stages (model chunks) per pipeline rank; > 1 only with interleaved
  // Interleaved only: micro-batches each virtual stage runs before the next chunk's turn
  // (Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage); 0 = pp, its default.
  int64_t microbatch_group = 0;
  int64_t micro_batch = 1;
  int64_t num_micro_batches = 1;  // per pipeline (per data-parallel replica) per iteration
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  int64_t recompute_layers = 0;  // with full recompute: layers per stage recomputed; 0 = all
  int64_t zero = 0;              // 0..3; 1 = distributed optimizer
  // Uneven pipeline split (Megatron-LM's --decoder-first/last-pipeline-num-layers): layers of the
  // first and last stage; 0 = the even share. The other stages split the rest evenly.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;
  // Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-
  // split: the embedding (the loss) counts as one layer of the split, so layers + 1 (+ 1) are
  // divided evenly over pp x vpp virtual stages and the first (last) virtual stage builds one
  // transformer layer fewer (megatron/core/transformer/transformer_block.py,
  // get_num_layers_to_build). Not with first/last_stage_layers, as Megatron-Core asserts.
  bool embedding_in_split = false;
  bool loss_in_split = false;
  Schedule schedule = Schedule::one_f_one_b;
  std::string order = "tp-dp-pp";  // placement, innermost first (cp right after tp if absent)

  int64_t gpus() const { return tp * cp * pp * dp; }
  bool operator==(const PlanSpec&) const = default;
};

// Ranks that hold the same weights and reduce their gradients together: the data-parallel ranks
// and, within each, the context-parallel ones (Megatron-Core's data-parallel group with context
// parallelism). ZeRO shards over them.
inline int64_t grad_ranks(const PlanSpec& p) { return p.dp * p.cp; }

// The expert tensor-parallel size the plan runs: etp, or tp when it is 0.
inline int64_t expert_tp(const PlanSpec& p) { return p.etp > 0 ? p.etp : p.tp; }
// Ranks that hold the same experts and reduce their gradients together (expert data parallelism).
inline int64_t expert_grad_ranks(const PlanSpec& p) {
  return p.tp * p.cp * p.dp / (expert_tp(p) * p.ep);
}

// The interleaved schedule's micro-batch group size: the plan's, or pp by default.
inline int64_t microbatch_group_size(const PlanSpec& p) {
  return p.microbatch_group > 0 ? p.microbatch_group : p.pp;
}

// The plan-file field a refusal of the counted embedding or loss names: the embedding's key when
// it is counted, the loss's otherwise.
inline const char* split_accounting_path(const PlanSpec& p) {
  return p.embedding_in_split ? "$.plan.account_for_embedding_in_pipeline_split"
                              : "$.plan.account_for_loss_in_pipeline_split";
}

// Layers on pipeline stage `stage` of a model with `layers` layers (plan already validated).
inline int64_t stage_layers(int64_t layers, const PlanSpec& p, int64_t stage) {
  if (p.embedding_in_split || p.loss_in_split) {
    const int64_t per = (layers + p.embedding_in_split + p.loss_in_split) / p.pp;
    return per - (stage == 0 && p.embedding_in_split) - (stage == p.pp - 1 && p.loss_in_split);
  }
  if (p.first_stage_layers == 0 && p.last_stage_layers == 0) return layers / p.pp;
  if (stage == 0 && p.first_stage_layers > 0) return p.first_stage_layers;
  if (stage == p.pp - 1 && p.last_stage_layers > 0) return p.last_stage_layers;
  const int64_t rest_stages = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
  return (layers - p.first_stage_layers - p.last_stage_layers) / rest_stages;
}

// The model's layers (0-based) pipeline stage `stage` runs: consecutive ones, or with the
// interleaved schedule (even stages) model chunk c of the stage is layers (c pp + stage) x n to
// (c pp + stage + 1) x n - 1, n = layers / (pp vpp), as Megatron-LM assigns them.
inline std::vector<int64_t> stage_layer_ids(int64_t layers, const PlanSpec& p, int64_t stage) {
  std::vector<int64_t> ids;
  if ((p.embedding_in_split || p.loss_in_split) && p.vpp > 1) {
    // Virtual stage v = c pp + stage holds n layers from v n on, the embedding (loss) taking the
    // place of one in the first (last): layers shift down by one after the embedding's stage.
    const int64_t n = (layers + p.embedding_in_split + p.loss_in_split) / (p.pp * p.vpp);
    const int64_t last = p.pp * p.vpp - 1;
    for (int64_t c = 0; c < p.vpp; ++c) {
      const int64_t v = c * p.pp + stage;
      const int64_t begin = v * n - (v > 0 && p.embedding_in_split);
      const int64_t size = n - (v == 0 && p.embedding_in_split) - (v == last && p.loss_in_split);
      for (int64_t l = 0; l < size; ++l) ids.push_back(begin + l);
    }
    return ids;
  }
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  if (p.vpp > 1 && !uneven && layers % (p.pp * p.vpp) == 0) {
    const int64_t n = layers / (p.pp * p.vpp);
    for (int64_t c = 0; c < p.vpp; ++c)
      for (int64_t l = 0; l < n; ++l) ids.push_back((c * p.pp + stage) * n + l);
    return ids;
  }
  int64_t first = 0;
  for (int64_t k = 0; k < stage; ++k) first += stage_layers(layers, p, k);
  for (int64_t l = 0; l < stage_layers(layers, p, stage); ++l) ids.push_back(first + l);
  return ids;
}

const char* to_string(Recompute r);
const char* to_string(Schedule s);
const char* to_string(MoeDispatcher d);
// to_string's inverse: the dispatcher a name spells, or nothing for any other name.
std::optional<MoeDispatcher> moe_dispatcher_from(const std::string& name);
// A dispatcher that sends a token once per destination node and rank (deepep, hybridep).
inline bool deduplicating(MoeDispatcher d) { return d != MoeDispatcher::alltoall; }
// True when order names tp, dp and pp (and optionally cp) once each, joined by '-'.
bool is_valid_order(const std::string& order);
// The order with cp placed right after tp when cp > 1 and the order does not name it.
std::string placement_order(const std::string& order, int64_t cp);

}  // namespace parallax
