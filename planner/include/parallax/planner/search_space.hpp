#pragma once
// The plans the planner considers, and the named rules that admit or reject them (docs/design.md §7).
// Every candidate is either admitted or rejected by exactly one rule (the first it breaks), so
// `--explain` can count rejections per rule and per reason.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class RejectReason { divisibility, trainer_rule, topology, memory };
const char* to_string(RejectReason r);

struct SearchOptions {
  bool allow_cross_node_tp = false;  // TP groups larger than a node
  bool allow_all = false;            // admit plans no existing trainer runs (trainer rules off)
  bool uneven_pp = false;            // also try lighter first/last stages (Megatron-LM's
                                     // --decoder-first/last-pipeline-num-layers)
  std::vector<Recompute> recompute = {Recompute::none, Recompute::selective, Recompute::full};
  std::vector<int64_t> zero = {0, 1, 2, 3};
  bool sequence_parallel = true;     // consider SP when tp > 1
  int64_t max_micro_batch = 64;      // largest micro-batch size considered
  int64_t force_tp = 0;              // 0 = search
  int64_t force_pp = 0;
  int64_t force_cp = 0;              // 0 = search (cp over the divisors that cut the sequence)
  // Only these values (a search file's lists); empty = every value. vpp 1 = no interleaving.
  std::vector<int64_t> tp_values, pp_values, mbs_values, vpp_values, cp_values;
  std::vector<int64_t> ep_values;  // mixture of experts: the ep sizes to try (empty: every one)
  std::vector<bool> sp_values;       // empty: off, and on when tp > 1 and sequence_parallel
  // Keep every candidate with its fate (plan --csv): rule-rejected ones in Candidates::rejected
  // and SearchResult::rejected, memory-rejected ones in SearchResult::unfit.
  bool record_candidates = false;
};

// A candidate a rule rejected; plans rejected before the micro-batch is chosen have micro_batch 0.
struct RejectedPlan {
  PlanSpec plan;
  std::string rule;
};

struct Rule {
  const char* name;
  RejectReason reason;
  const char* text;  // what must hold
};

// The rule catalogue, in the order they are checked.
const std::vector<Rule>& plan_rules();

struct Candidates {
  std::vector<PlanSpec> admitted;                 // before the memory filter
  std::vector<RejectedPlan> rejected;             // with SearchOptions::record_candidates
  std::map<std::string, int64_t> rejected_by_rule;
  std::map<std::string, int64_t> rejected_by_reason;
  int64_t considered = 0;
};

// Enumerates tp x cp x pp x dp x micro-batch x schedule/vpp x recompute x SP x ZeRO for `gpus` GPUs.
Candidates enumerate_plans(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                           int64_t gpus, const SearchOptions& o);

// The first rule the plan breaks, or nullptr when admitted (memory is checked by the caller).
const Rule* first_broken_rule(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j,
                              const PlanSpec& p, int64_t gpus, const SearchOptions& o);

}  // namespace parallax
