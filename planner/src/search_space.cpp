#include "parallax/planner/search_space.hpp"

#include <algorithm>

#include "parallax/core/divisors.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {
namespace {

enum RuleId {
  kTpHeads,
  kTpKvHeads,
  kTpFfn,
  kTpNode,
  kCpSeq,
  kCpFused,
  kCpNode,
  kPpLayers,
  kBatchDp,
  kSpSeq,
  kVppLayers,
  kInterleavedM,
  kGpipe,
  kZeroPp,
  kEpExperts,
  kEpRanks,
  kEtpFfn,
  kMoeSp,
  kStack,
  kRuleCount
};

// The plan's pipeline split is runnable: even, or Megatron-LM's uneven first/last stages.
bool split_ok(int64_t layers, const PlanSpec& p) {
  const int64_t f = p.first_stage_layers;
  const int64_t l = p.last_stage_layers;
  if (f == 0 && l == 0) return layers % p.pp == 0;
  const int64_t rest_stages = p.pp - (f > 0) - (l > 0);
  const int64_t rest = layers - f - l;
  if (rest_stages == 0) return rest == 0;
  return rest >= rest_stages && rest % rest_stages == 0;
}

// Pipeline splits to try for pp: the even one, or the stack's own cut when it makes one
// (DeepSpeed: ceil(layers / pp) per stage, the last the rest), and with uneven_pp, lighter first
// and last stages (equal, f = l) that leave the middle stages an even share at least as large.
std::vector<std::pair<int64_t, int64_t>> splits(int64_t layers, int64_t pp, bool uneven,
                                                UnevenStages stack_cut) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (layers % pp == 0) {
    out.push_back({0, 0});
  } else if (stack_cut == UnevenStages::deepspeed_balanced && pp >= 3) {
    const DeepspeedStageCut cut = deepspeed_balanced_cut(layers, pp);
    if (cut.last_stage_layers >= 1) out.push_back({cut.stage_layers, cut.last_stage_layers});
  }
  if (!uneven || pp < 3) return out;
  for (int64_t f = 1; f * pp <= layers; ++f) {
    const int64_t rest = layers - 2 * f;
    if (rest % (pp - 2) == 0 && rest / (pp - 2) > f) out.push_back({f, f});
  }
  return out;
}

bool allowed(const std::vector<int64_t>& values, int64_t x) {
  return values.empty() || std::find(values.begin(), values.end(), x) != values.end();
}

// The (cp, pp) pairs to try on the GPUs tp leaves: cp a divisor up to half the sequence (the
// cp-divides-seq rule rejects those that do not cut it into 2cp chunks), pp a divisor up to the
// layers, each as the options restrict it.
std::vector<std::pair<int64_t, int64_t>> context_pipeline_sizes(const ModelSpec& m, int64_t gpus,
                                                                const SearchOptions& o) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t cp : divisors(gpus)) {
    if (cp > 1 && cp > m.seq_len / 2) break;
    if ((o.force_cp > 0 && cp != o.force_cp) || !allowed(o.cp_values, cp)) continue;
    for (int64_t pp : divisors(gpus / cp)) {
      if (pp > m.layers) break;
      if ((o.force_pp > 0 && pp != o.force_pp) || !allowed(o.pp_values, pp)) continue;
      out.emplace_back(cp, pp);
    }
  }
  return out;
}

// The (ep, etp) pairs to try: (1, 0) for a dense model; for a mixture of experts every ep that
// divides the experts and the stage's tp * cp * dp ranks, with the expert FFN split over tp
// (etp 0, Megatron-Core's default) or not at all (etp 1, what its MoE guide recommends with ep).
std::vector<std::pair<int64_t, int64_t>> expert_sizes(const ModelSpec& m, int64_t ranks, int64_t tp,
                                                      const SearchOptions& o) {
  if (!m.is_moe()) return {{1, 0}};
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t ep : divisors(m.moe.num_experts)) {
    if (ranks % ep != 0 || !allowed(o.ep_values, ep)) continue;
    for (int64_t etp : tp > 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}) {
      if (ranks % ((etp > 0 ? etp : tp) * ep) == 0) out.emplace_back(ep, etp);
    }
  }
  return out;
}

// The token dispatchers to try with expert parallelism: alltoall, and one deduplicating
// dispatcher when the stack runs one (deepep and hybridep cost the same: hybridep, Megatron-Core's
// choice for Megatron-Bridge's current recipes, when both are listed).
std::vector<MoeDispatcher> dispatchers(int64_t ep, const JobSpec& j) {
  std::vector<MoeDispatcher> out{MoeDispatcher::alltoall};
  if (ep <= 1) return out;
  const auto& listed = j.capabilities.moe_dispatchers;
  for (MoeDispatcher d : {MoeDispatcher::hybridep, MoeDispatcher::deepep})
    if (std::find(listed.begin(), listed.end(), d) != listed.end()) {
      out.push_back(d);
      break;
    }
  return out;
}

}  // namespace

const char* to_string(RejectReason r) {
  switch (r) {
    case RejectReason::divisibility:
      return "divisibility";
    case RejectReason::trainer_rule:
      return "trainer rule";
    case RejectReason::topology:
      return "topology";
    case RejectReason::memory:
      return "memory";
  }
  return "?";
}

const std::vector<Rule>& plan_rules() {
  static const std::vector<Rule> rules = {
      {"tp-divides-heads", RejectReason::divisibility, "attention heads % tp == 0"},
      {"tp-divides-kv-heads", RejectReason::divisibility, "kv heads % tp == 0"},
      {"tp-divides-ffn", RejectReason::divisibility, "ffn_hidden % tp == 0"},
      {"tp-within-node", RejectReason::topology,
       "tp <= GPUs per node (TP all-reduces stay on NVLink; --allow-cross-node-tp)"},
      {"cp-divides-seq", RejectReason::divisibility,
       "seq_len % (2 * cp) == 0 (causal load balancing: each cp rank holds chunks i and 2cp-1-i)"},
      {"cp-needs-fused-attention", RejectReason::trainer_rule,
       "context parallelism runs its key/value ring inside a fused attention kernel (Transformer "
       "Engine, PyTorch SDPA): the job's attention must be fused"},
      {"cp-within-node", RejectReason::topology,
       "tp * cp <= GPUs per node where the stack keeps its context-parallel ring on NVLink "
       "(capabilities.context_parallel_within_node)"},
      {"pp-divides-layers", RejectReason::divisibility, "layers % pp == 0"},
      {"dp-divides-batch", RejectReason::divisibility, "global batch % (dp * micro-batch) == 0"},
      {"sp-divides-seq", RejectReason::divisibility,
       "(seq_len / cp) % tp == 0 with sequence parallelism"},
      {"vpp-divides-stage", RejectReason::divisibility, "layers % (pp * vpp) == 0"},
      {"interleaved-m-multiple-of-pp", RejectReason::trainer_rule,
       "Megatron-LM interleaving needs micro-batches % pp == 0; where the stack runs micro-batch "
       "groups (Megatron-Core), the smallest group N with pp <= N <= m and m % N zero or >= pp"},
      {"gpipe-not-in-trainers", RejectReason::trainer_rule,
       "Megatron-LM and DeepSpeed run 1F1B, not GPipe (--allow-all admits it)"},
      {"zero23-needs-pp1", RejectReason::trainer_rule,
       "ZeRO-2/3 do not run with pipeline parallelism (Megatron-LM, DeepSpeed); TorchTitan's "
       "FSDP with pp moves and holds what ZeRO-1 does, which the search covers"},
      {"ep-divides-experts", RejectReason::divisibility, "num_experts % ep == 0"},
      {"ep-divides-ranks", RejectReason::divisibility,
       "(tp * cp * dp) % (etp * ep) == 0 (the expert layers re-split each stage's ranks)"},
      {"etp-divides-expert-ffn", RejectReason::divisibility, "expert_ffn_hidden % etp == 0"},
      {"moe-tp-needs-sp", RejectReason::trainer_rule,
       "a mixture of experts with tp > 1 runs sequence parallel (Megatron-Core's MoE layer raises "
       "without it)"},
      {"stack-runs-it", RejectReason::trainer_rule,
       "the stack's capability table (presets/stacks/, \"capabilities\") admits the ZeRO stage, "
       "schedule, parallel dimensions and model (--allow-all admits what it does not)"},
  };
  return rules;
}

const Rule* first_broken_rule(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                              const PlanSpec& p, int64_t gpus, const SearchOptions& o) {
  const auto& r = plan_rules();
  (void)gpus;
  if (m.heads % p.tp != 0) return &r[kTpHeads];
  if (m.kv_head_count() % p.tp != 0) return &r[kTpKvHeads];
  if (m.ffn_hidden % p.tp != 0) return &r[kTpFfn];
  if (!o.allow_cross_node_tp && p.tp > c.gpus_per_node) return &r[kTpNode];
  if (m.seq_len % (2 * p.cp) != 0 && p.cp > 1) return &r[kCpSeq];
  if (p.cp > 1 && j.attention != Attention::fused) return &r[kCpFused];
  if (p.cp > 1 && j.capabilities.context_parallel_within_node && p.tp * p.cp > c.gpus_per_node)
    return &r[kCpNode];
  if (!split_ok(m.layers, p)) return &r[kPpLayers];
  if (j.global_batch % (p.dp * p.micro_batch) != 0) return &r[kBatchDp];
  if (p.sequence_parallel && (m.seq_len / p.cp) % p.tp != 0) return &r[kSpSeq];
  if (p.vpp > 1 && m.layers % (p.pp * p.vpp) != 0) return &r[kVppLayers];
  if (p.schedule == Schedule::interleaved &&
      (p.microbatch_group == 0 ? p.num_micro_batches % p.pp != 0
                               : !microbatch_group_refusal(p.pp, p.num_micro_batches,
                                                           p.microbatch_group).empty())) {
    return &r[kInterleavedM];
  }
  if (m.is_moe()) {
    if (m.moe.num_experts % p.ep != 0) return &r[kEpExperts];
    if ((p.tp * p.cp * p.dp) % (expert_tp(p) * p.ep) != 0) return &r[kEpRanks];
    if (m.moe.expert_ffn_hidden % expert_tp(p) != 0) return &r[kEtpFfn];
    if (p.tp > 1 && !p.sequence_parallel) return &r[kMoeSp];
  }
  if (!o.allow_all && p.schedule == Schedule::gpipe) return &r[kGpipe];
  if (!o.allow_all && p.zero >= 2 && p.pp > 1) return &r[kZeroPp];
  if (!o.allow_all && stack_refusal(m, j, p)) return &r[kStack];
  return nullptr;
}

namespace {

// Schedules: no pipeline, or 1F1B, GPipe and interleaved with every vpp. Interleaving needs equal
// chunks: only with the even split (first == 0).
std::vector<std::pair<Schedule, int64_t>> schedules_for(const ModelSpec& m, int64_t pp, int64_t first) {
  std::vector<std::pair<Schedule, int64_t>> schedules = {{Schedule::one_f_one_b, 1}};
  if (pp > 1) {
    schedules.push_back({Schedule::gpipe, 1});
    for (int64_t v : first == 0 ? divisors(m.layers / pp) : std::vector<int64_t>{}) {
      if (v >= 2) schedules.push_back({Schedule::interleaved, v});
    }
  }
  return schedules;
}

bool sp_allowed(const SearchOptions& o, bool sp) {
  return o.sp_values.empty() || std::find(o.sp_values.begin(), o.sp_values.end(), sp) != o.sp_values.end();
}

}  // namespace

Candidates enumerate_plans(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, int64_t gpus,
                           const SearchOptions& o) {
  Candidates out;
  auto reject_plan = [&](const Rule* rule, const PlanSpec& p) {
    ++out.rejected_by_rule[rule->name];
    ++out.rejected_by_reason[to_string(rule->reason)];
    if (o.record_candidates) out.rejected.push_back({p, rule->name});
  };
  for (int64_t tp : divisors(gpus)) {
    if (tp > m.heads) break;
    if ((o.force_tp > 0 && tp != o.force_tp) || !allowed(o.tp_values, tp)) continue;
    for (const auto& [cp, pp] : context_pipeline_sizes(m, gpus / tp, o)) {
      const int64_t dp = gpus / (tp * cp * pp);
      PlanSpec base;
      base.tp = tp;
      base.cp = cp;
      base.pp = pp;
      base.dp = dp;
      // Plans rejected before the micro-batch is chosen count once per (tp, cp, pp).
      const auto pipeline_splits = splits(m.layers, pp, o.uneven_pp, j.capabilities.uneven_stages);
      if (const Rule* r = first_broken_rule(m, c, j, base, gpus, o);
          r != nullptr &&
          !(pipeline_splits.size() > 0 && std::string(r->name) == "pp-divides-layers")) {
        ++out.considered;
        reject_plan(r, base);
        continue;
      }
      if (pipeline_splits.empty()) {
        ++out.considered;
        reject_plan(&plan_rules()[kPpLayers], base);
        continue;
      }
      for (const auto& [first, last] : pipeline_splits) {
        base.first_stage_layers = first;
        base.last_stage_layers = last;
        const int64_t per_replica = j.global_batch / dp;
        for (int64_t mbs : divisors(per_replica)) {
          if (mbs > o.max_micro_batch) break;
          if (!allowed(o.mbs_values, mbs)) continue;
          base.micro_batch = mbs;
          base.num_micro_batches = per_replica / mbs;
          for (const auto& [sched, vpp] : schedules_for(m, pp, first)) {
            if (!allowed(o.vpp_values, vpp)) continue;
            for (Recompute rc : o.recompute) {
              for (int sp = 0; sp <= (o.sequence_parallel && tp > 1 ? 1 : 0); ++sp) {
                if (!sp_allowed(o, sp == 1)) continue;
                for (const auto& [ep, etp] : expert_sizes(m, tp * cp * dp, tp, o))
                for (MoeDispatcher disp : dispatchers(ep, j))
                for (int64_t z : o.zero) {
                  if (dp * cp == 1 && z > 0) continue;  // nothing to shard
                  PlanSpec p = base;
                  p.ep = ep;
                  p.etp = etp;
                  p.moe_dispatcher = disp;
                  p.schedule = sched;
                  p.vpp = vpp;
                  // Megatron-Core runs m not divisible by pp in larger micro-batch groups.
                  if (sched == Schedule::interleaved && p.num_micro_batches % pp != 0 &&
                      (o.allow_all || j.capabilities.microbatch_groups))
                    p.microbatch_group = smallest_microbatch_group(pp, p.num_micro_batches);
                  p.recompute = rc;
                  p.sequence_parallel = sp == 1;
                  p.zero = z;
                  ++out.considered;
                  if (const Rule* r = first_broken_rule(m, c, j, p, gpus, o)) {
                    reject_plan(r, p);
                  } else {
                    out.admitted.push_back(p);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace parallax
