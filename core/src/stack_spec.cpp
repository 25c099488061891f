#include "parallax/core/stack_spec.hpp"

#include <algorithm>

namespace parallax {

void apply_stack(const StackSpec& stack, JobSpec& j) {
  j.attention = stack.attention;
  j.kernels = stack.kernels;
  j.overlap = stack.overlap;
  j.fp8 = stack.fp8;
  j.loss_bytes_per_logit = stack.loss_bytes_per_logit;
  j.selective = stack.selective;
  j.pipeline = stack.pipeline;
  j.capabilities = stack.capabilities;
}

int64_t zero_stage_run(const JobSpec& j, const PlanSpec& p) {
  if (p.zero >= 2 && p.pp > 1 && j.pipeline.sharded_stages) return 1;
  return p.zero;
}

DeepspeedStageCut deepspeed_balanced_cut(int64_t layers, int64_t pp) {
  const int64_t per = (layers + pp - 1) / pp;
  return {per, layers - (pp - 1) * per};
}

namespace {

template <class T>
bool listed(const std::vector<T>& list, const T& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// "a", "a or b", "a, b or c": the items joined for a sentence, `last` before the final one.
template <class T, class Name>
std::string join_words(const std::vector<T>& items, const char* last, Name name) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == items.size() ? last : ", ") + name(items[i]);
  return out;
}

}  // namespace

std::optional<StackRefusal> stack_model_refusal(const ModelSpec& m, const JobSpec& j) {
  const StackCapabilities& c = j.capabilities;
  if (!m.is_moe() || c.moe) return std::nullopt;
  return StackRefusal{"$.model.moe.num_experts",
                      "stack \"" + j.framework + "\" runs dense models only (got num_experts " +
                          std::to_string(m.moe.num_experts) + ")" +
                          (c.moe_refusal.empty() ? "" : ": " + c.moe_refusal)};
}

std::optional<StackRefusal> stack_refusal(const ModelSpec& m, const JobSpec& j, const PlanSpec& p) {
  const StackCapabilities& c = j.capabilities;
  // The planner asks this of every candidate: strings are built only for a refusal.
  auto refuse = [&](const char* path, const std::string& rule) {
    return StackRefusal{path, "stack \"" + j.framework + "\" " + rule};
  };
  auto n = [](int64_t x) { return std::to_string(x); };
  if (!listed(c.zero_stages, p.zero))
    return refuse("$.plan.zero", "runs ZeRO stage " + join_words(c.zero_stages, " or ", n) + " (got " +
                                     n(p.zero) + ")");
  if (!listed(c.schedules, p.schedule))
    return refuse("$.plan.schedule", std::string("has no ") + to_string(p.schedule) + " schedule");
  if (p.microbatch_group != 0 && p.microbatch_group != p.pp && !c.microbatch_groups)
    return refuse("$.plan.microbatch_group", "runs interleaved micro-batches in groups of pp (" +
                                                 n(p.pp) + ") only (got microbatch_group " +
                                                 n(p.microbatch_group) + ")");
  if (p.tp > 1 && !c.tensor_parallel)
    return refuse("$.plan.tp", "has no tensor parallelism (got tp " + n(p.tp) + ")");
  if (p.sequence_parallel && !c.sequence_parallel)
    return refuse("$.plan.sequence_parallel", "has no sequence parallelism");
  if (p.zero == 0 && c.zero0_sole_parallelism && (p.cp > 1 || (p.dp > 1 && (p.tp > 1 || p.pp > 1))))
    return refuse("$.plan.zero", "runs ZeRO-0 (DDP) only as the sole parallelism, and shards with "
                                 "FSDP otherwise (got zero 0 with dp " + n(p.dp) + ", tp " + n(p.tp) +
                                     ", cp " + n(p.cp) + ", pp " + n(p.pp) + ")");
  if (p.cp > 1 && !c.context_parallel)
    return refuse("$.plan.cp", "has no context parallelism (got cp " + n(p.cp) + ")" +
                                   (c.context_parallel_refusal.empty() ? "" : ": " + c.context_parallel_refusal));
  if (auto r = stack_model_refusal(m, j)) return r;
  if (p.ep > 1 && !c.expert_parallel)
    return refuse("$.plan.ep", "has no expert parallelism (got ep " + n(p.ep) + ")");
  if (m.is_moe() && expert_tp(p) != p.tp && !c.expert_tensor_parallel)
    return refuse("$.plan.etp", "shards the experts over tp as the dense MLP: etp must be 0 or tp " +
                                    n(p.tp) + " (got etp " + n(p.etp) + ")");
  if (p.ep > 1 && !listed(c.moe_dispatchers, p.moe_dispatcher)) {
    // The stack's own list: "the alltoall token dispatcher", "the alltoall and deepep token dispatchers".
    const std::string names =
        join_words(c.moe_dispatchers, " and ", [](MoeDispatcher d) { return std::string(to_string(d)); });
    return refuse("$.plan.moe_dispatcher", "runs the " + names + " token dispatcher" +
                                               (c.moe_dispatchers.size() > 1 ? "s" : "") + " only (got " +
                                               to_string(p.moe_dispatcher) + ")");
  }
  if (p.ep > 1 && !c.expert_parallel_zero.empty() && !listed(c.expert_parallel_zero, p.zero))
    return refuse("$.plan.zero", "runs expert parallelism with ZeRO stage " +
                                     n(c.expert_parallel_zero.front()) +
                                     (c.expert_parallel_zero.size() > 1 ? " and others" : " only") +
                                     " (got zero " + n(p.zero) + " with ep " + n(p.ep) + ")");
  if (p.pp > 1 && !c.pipeline_parallel)
    return refuse("$.plan.pp", "has no pipeline parallelism (got pp " + n(p.pp) + ")");
  if (m.kv_heads != m.heads && !c.grouped_query_attention)
    return refuse("$.model.kv_heads", "runs multi-head attention only (kv_heads " +
                                          n(m.kv_heads) + ", heads " + n(m.heads) + ")");
  if ((p.embedding_in_split || p.loss_in_split) && !c.pipeline_split_accounting)
    return refuse(split_accounting_path(p),
                  "does not count the embedding or the loss as pipeline layers (Megatron-Core's "
                  "--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split)");
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  const char* uneven_path = p.first_stage_layers > 0 ? "$.plan.first_stage_layers" : "$.plan.last_stage_layers";
  if (uneven && c.uneven_stages == UnevenStages::none)
    return refuse(uneven_path, "splits the pipeline evenly only");
  if (uneven && c.uneven_stages == UnevenStages::deepspeed_balanced) {
    const DeepspeedStageCut cut = deepspeed_balanced_cut(m.layers, p.pp);
    const int64_t per = cut.stage_layers, last = cut.last_stage_layers;
    if (p.first_stage_layers != per || p.last_stage_layers != last || last < 1)
      return refuse(uneven_path, "cuts stages itself (DeepSpeed's partition_method "
                                 "type:transformer): " + n(m.layers) + " layers on pp " + n(p.pp) +
                                     (last < 1 ? " leave its last stage empty"
                                               : " run as " + n(per) + " per stage and " + n(last) +
                                                     " on the last (first_stage_layers " + n(per) +
                                                     ", last_stage_layers " + n(last) + ")"));
  }
  if (!listed(c.positions, m.position))
    return refuse("$.model.position", std::string("has no ") + to_string(m.position) + " position embedding");
  if (j.dtype == Dtype::fp8 && !c.fp8) return refuse("$.job.dtype", "does not train in fp8");
  return std::nullopt;
}

}  // namespace parallax
