// The invariants that tie a plan to a model, cluster, job and GPU count: what Megatron-LM would
// reject at start-up (or what cannot be laid out at all), reported before anything runs.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"
#include "int_text.hpp"

namespace parallax {

bool is_valid_order(const std::string& order) {
  std::set<std::string> seen;
  std::stringstream parts(order);
  std::string part;
  while (std::getline(parts, part, '-')) {
    if (part != "tp" && part != "dp" && part != "pp" && part != "cp") return false;
    if (!seen.insert(part).second) return false;
  }
  // getline drops one trailing '-', so "tp-dp-pp-" would otherwise pass.
  return !order.empty() && order.back() != '-' && seen.count("tp") && seen.count("dp") &&
         seen.count("pp");
}

std::string placement_order(const std::string& order, int64_t cp) {
  if (cp == 1 || order.find("cp") != std::string::npos) return order;
  const size_t tp = order.find("tp");
  if (tp == std::string::npos) return order;  // is_valid_order reports it
  return order.substr(0, tp + 2) + "-cp" + order.substr(tp + 2);
}

namespace {

using detail::n;

// Saturates instead of overflowing: plans built in code are not range-checked by a reader.
int64_t product(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    return std::numeric_limits<int64_t>::max();
  return a * b;
}

class PlanChecker {
 public:
  PlanChecker(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
              int64_t gpus, const std::string& source)
      : m_(m), c_(c), j_(j), p_(p), gpus_(gpus), source_(source) {}

  void run() {
    check_ranges();
    check_gpu_count();
    check_tensor_parallel();
    check_context_parallel();
    check_expert_parallel();
    check_pipeline_parallel();
    check_batch();
    check_interleaving();
    check_sequence_parallel();
    check_recompute();
    check_zero();
    check_dtype();
    check_stack();
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& rule) const {
    throw InputError(source_, path, rule);
  }

  void at_least(const char* field, int64_t value, int64_t min) const {
    if (value < min)
      fail(std::string("$.plan.") + field, "must be >= " + n(min) + " (got " + n(value) + ")");
  }

  // Plans built in code (the planner) never went through read_plan's range checks.
  void check_ranges() const {
    at_least("tp", p_.tp, 1);
    at_least("cp", p_.cp, 1);
    at_least("pp", p_.pp, 1);
    at_least("dp", p_.dp, 1);
    at_least("ep", p_.ep, 1);
    at_least("etp", p_.etp, 0);
    at_least("vpp", p_.vpp, 1);
    at_least("micro_batch", p_.micro_batch, 1);
    at_least("num_micro_batches", p_.num_micro_batches, 0);
    at_least("recompute_layers", p_.recompute_layers, 0);
    if (p_.zero < 0 || p_.zero > 3)
      fail("$.plan.zero", "must be 0, 1, 2 or 3 (got " + n(p_.zero) + ")");
    if (j_.global_batch < 1)
      fail("$.job.global_batch", "must be >= 1 (got " + n(j_.global_batch) + ")");
    if (!is_valid_order(p_.order))
      fail("$.plan.order",
           "must be tp, dp and pp (and optionally cp), each once, joined by '-' (got \"" +
               p_.order + "\")");
  }

  void check_gpu_count() const {
    if (gpus_ < 1) fail("$.gpus", "must be >= 1 (got " + n(gpus_) + ")");
    if (gpus_ > c_.total_gpus())
      fail("$.gpus", "gpus (" + n(gpus_) + ") must be <= the cluster's nodes (" + n(c_.nodes) +
                         ") * gpus_per_node (" + n(c_.gpus_per_node) + ") = " + n(c_.total_gpus()));
    const int64_t used = product(product(product(p_.tp, p_.cp), p_.pp), p_.dp);
    const std::string cp = p_.cp != 1 ? " * cp (" + n(p_.cp) + ")" : "";
    if (used != gpus_)
      fail("$.plan", "tp (" + n(p_.tp) + ")" + cp + " * pp (" + n(p_.pp) + ") * dp (" + n(p_.dp) +
                         ") = " + n(used) + " must equal gpus (" + n(gpus_) + ")");
  }

  // Context parallelism with causal load balancing (Megatron-Core / Transformer Engine): the
  // sequence is cut into 2cp chunks and rank i holds chunks i and 2cp-1-i.
  void check_context_parallel() const {
    if (p_.cp == 1) return;
    const int64_t chunks = product(2, p_.cp);
    if (m_.seq_len % chunks != 0)
      fail("$.plan.cp", "seq_len (" + n(m_.seq_len) + ") must be divisible by 2 * cp = " +
                            n(chunks) + " (each cp rank holds chunks i and 2cp-1-i of 2cp)");
    // A stack without it says why (before the attention rule, which would be beside the point).
    if (const auto r = stack_refusal(m_, j_, p_); r && r->path == "$.plan.cp") fail(r->path, r->rule);
    // The ring runs inside a fused attention kernel (Transformer Engine's, PyTorch's SDPA).
    if (j_.attention != Attention::fused)
      fail("$.plan.cp", "context parallelism needs fused attention (its key/value ring runs inside "
                        "the fused kernel); the job's attention is unfused");
  }

  // Expert layers re-split each stage's tp * cp * dp ranks as etp * ep * edp (Megatron-Core's MoE
  // parallel folding, megatron/core/parallel_state.py): ep ranks own num_experts / ep experts
  // each (megatron/training/arguments.py: "Number of experts should be a multiple of expert
  // model parallel_size"), and every expert's FFN columns split over etp ranks.
  void check_expert_parallel() const {
    if (!m_.is_moe()) {
      if (p_.ep != 1) fail("$.plan.ep", "expert parallelism needs a mixture-of-experts model (got ep " + n(p_.ep) + " for a dense model)");
      if (p_.etp != 0) fail("$.plan.etp", "an expert tensor-parallel size needs a mixture-of-experts model (got etp " + n(p_.etp) + " for a dense model)");
    }
    if (p_.moe_dispatcher != MoeDispatcher::alltoall && p_.ep == 1)
      fail("$.plan.moe_dispatcher", std::string("a token dispatcher other than alltoall needs expert parallelism, ep > 1 (got ") +
                                        to_string(p_.moe_dispatcher) + " with ep 1)");
    if (!m_.is_moe()) return;
    if (const auto r = stack_refusal(m_, j_, p_);
        r && (r->path == "$.model.moe.num_experts" || r->path == "$.plan.ep"))
      fail(r->path, r->rule);
    if (m_.moe.num_experts % p_.ep != 0)
      fail("$.plan.ep", "num_experts (" + n(m_.moe.num_experts) + ") must be divisible by ep (" + n(p_.ep) + ")");
    const int64_t etp = expert_tp(p_);
    const int64_t ranks = product(product(p_.tp, p_.cp), p_.dp);
    if (ranks % product(etp, p_.ep) != 0)
      fail("$.plan.ep", "etp (" + n(etp) + ") * ep (" + n(p_.ep) + ") must divide tp * cp * dp (" +
                            n(ranks) + "): the expert layers re-split each stage's ranks");
    divisible("$.plan.etp", "expert_ffn_hidden", m_.moe.expert_ffn_hidden, "etp", etp);
    divisible("$.plan.tp", "shared experts' ffn_hidden",
              m_.moe.shared_experts * m_.moe.shared_expert_ffn_hidden, "tp", p_.tp);
    // megatron/core/transformer/moe/moe_layer.py raises in training with tp > 1 and no SP: the
    // tokens reach the router sequence-parallel (each TP rank routes its own 1/tp of them).
    if (p_.tp > 1 && !p_.sequence_parallel)
      fail("$.plan.sequence_parallel", "a mixture-of-experts model with tp > 1 (got tp " + n(p_.tp) +
                                           ") needs sequence parallelism (Megatron-Core's MoE layer)");
  }

  // Megatron splits attention heads, key/value groups and the FFN columns over TP ranks. The
  // vocabulary is padded to a multiple of tp by Megatron, so it need not divide.
  void check_tensor_parallel() const {
    divisible("$.plan.tp", "heads", m_.heads, "tp", p_.tp);
    divisible("$.plan.tp", "kv_heads", m_.kv_heads, "tp", p_.tp);
    divisible("$.plan.tp", "ffn_hidden", m_.ffn_hidden, "tp", p_.tp);
  }

  // Megatron-Core's embedding and loss counted in the pipeline split (get_num_layers_to_build):
  // layers + 1 (+ 1) over pp stages, and with interleaving over pp x vpp virtual stages, evenly;
  // Megatron-Core lets the first (last) virtual stage hold the embedding (loss) alone, Parallax
  // needs a transformer layer in every virtual stage.
  void check_split_accounting() const {
    const std::string path = split_accounting_path(p_);
    if (p_.first_stage_layers > 0 || p_.last_stage_layers > 0)
      fail(path, "does not combine with first_stage_layers or last_stage_layers (Megatron-Core refuses it)");
    const int64_t counted = m_.layers + p_.embedding_in_split + p_.loss_in_split;
    const std::string what = "layers (" + n(m_.layers) + ") + " +
                             (p_.embedding_in_split && p_.loss_in_split ? "2 (embedding and loss)"
                              : p_.embedding_in_split                  ? "1 (embedding)"
                                                                       : "1 (loss)") +
                             " = " + n(counted);
    const int64_t chunks = product(p_.pp, p_.vpp);
    if (counted % chunks != 0)
      fail(path, what + " must be divisible by pp (" + n(p_.pp) + ")" +
                     (p_.vpp > 1 ? " * vpp (" + n(p_.vpp) + ") = " + n(chunks) : ""));
    const int64_t per = counted / chunks, e = p_.embedding_in_split, l = p_.loss_in_split;
    if (chunks == 1 ? per - e - l < 1 : per - e < 1 || per - l < 1)
      fail(path, what + " over " + n(chunks) + " stages leaves a stage with the " +
                     (p_.embedding_in_split ? "embedding" : "loss") + " and no transformer layer");
  }

  void check_pipeline_parallel() const {
    const int64_t f = p_.first_stage_layers;
    const int64_t l = p_.last_stage_layers;
    if (p_.embedding_in_split || p_.loss_in_split) {
      check_split_accounting();
      return;
    }
    if (f == 0 && l == 0) {
      divisible("$.plan.pp", "layers", m_.layers, "pp", p_.pp);
      return;
    }
    // Megatron-LM's uneven split: first and/or last stage given, the rest split evenly.
    const std::string path = f > 0 ? "$.plan.first_stage_layers" : "$.plan.last_stage_layers";
    if (p_.pp < 2) fail(path, "an uneven pipeline split needs pp >= 2 (got pp " + n(p_.pp) + ")");
    if (p_.vpp > 1 && !j_.pipeline.unequal_virtual_stages)
      fail(path, "an uneven pipeline split does not combine with interleaving (vpp " + n(p_.vpp) + ")");
    const int64_t rest_stages = p_.pp - (f > 0) - (l > 0);
    const int64_t rest_layers = m_.layers - f - l;
    if (rest_layers < rest_stages)
      fail(path, "first (" + n(f) + ") + last (" + n(l) + ") stage layers leave " + n(std::max<int64_t>(0, rest_layers)) +
                     " of the model's " + n(m_.layers) + " layers for the other " + n(rest_stages) +
                     " stages, which need at least one each");
    if (rest_stages == 0) {
      if (rest_layers != 0)
        fail(path, "first (" + n(f) + ") + last (" + n(l) + ") stage layers must equal layers (" +
                       n(m_.layers) + ") when pp is 2");
      return;
    }
    if (rest_layers < rest_stages || rest_layers % rest_stages != 0)
      fail(path, "the other " + n(rest_stages) + " stages must split the remaining " +
                     n(rest_layers) + " layers evenly, at least one each");
  }

  void check_batch() const {
    const int64_t per_micro_step = product(p_.micro_batch, p_.dp);
    if (j_.global_batch % per_micro_step != 0)
      fail("$.plan.micro_batch", "global_batch (" + n(j_.global_batch) +
                                     ") must be divisible by micro_batch (" + n(p_.micro_batch) +
                                     ") * dp (" + n(p_.dp) + ") = " + n(per_micro_step));
    const int64_t derived = j_.global_batch / per_micro_step;
    if (p_.num_micro_batches != 0 && p_.num_micro_batches != derived)
      fail("$.plan.num_micro_batches", "must equal global_batch (" + n(j_.global_batch) +
                                           ") / (micro_batch (" + n(p_.micro_batch) + ") * dp (" +
                                           n(p_.dp) + ")) = " + n(derived) + " (got " +
                                           n(p_.num_micro_batches) + ")");
  }

  int64_t micro_batches() const {
    return p_.num_micro_batches != 0 ? p_.num_micro_batches
                                     : j_.global_batch / product(p_.micro_batch, p_.dp);
  }

  // Megatron-LM's interleaved 1F1B: each pipeline rank holds vpp model chunks of equal size, and
  // the schedule walks micro-batches in groups of pp, or of microbatch_group (Megatron-Core).
  void check_interleaving() const {
    const bool interleaved = p_.schedule == Schedule::interleaved;
    if (p_.vpp == 1) {
      if (interleaved)
        fail("$.plan.schedule", "schedule \"interleaved\" requires vpp > 1 (got vpp 1)");
      if (p_.microbatch_group != 0)
        fail("$.plan.microbatch_group", "micro-batch groups need the interleaved schedule (vpp > 1)");
      return;
    }
    if (!interleaved)
      fail("$.plan.schedule", "vpp (" + n(p_.vpp) +
                                  ") > 1 requires schedule \"interleaved\" (got \"" +
                                  to_string(p_.schedule) + "\")");
    if (p_.pp < 2)
      fail("$.plan.vpp", "vpp (" + n(p_.vpp) + ") > 1 requires pp >= 2 (got pp " + n(p_.pp) + ")");
    const int64_t chunks = product(p_.pp, p_.vpp);
    if (p_.embedding_in_split || p_.loss_in_split) {
      // check_split_accounting divided layers + embedding + loss over the chunks.
    } else if (j_.pipeline.unequal_virtual_stages) {
      // Virtual stages may differ by a layer; each stage's chunks need a layer each.
      for (int64_t k = 0; k < p_.pp; ++k)
        if (stage_layers(m_.layers, p_, k) < p_.vpp)
          fail("$.plan.vpp", "vpp (" + n(p_.vpp) + ") exceeds the " + n(stage_layers(m_.layers, p_, k)) +
                                 " layers of pipeline stage " + n(k));
    } else if (m_.layers % chunks != 0)
      fail("$.plan.vpp", "layers (" + n(m_.layers) + ") must be divisible by pp (" + n(p_.pp) +
                             ") * vpp (" + n(p_.vpp) + ") = " + n(chunks));
    if (p_.microbatch_group != 0) {
      const std::string rule = microbatch_group_refusal(p_.pp, micro_batches(), p_.microbatch_group);
      if (!rule.empty()) fail("$.plan.microbatch_group", rule);
    } else if (micro_batches() % p_.pp != 0) {
      fail("$.plan.num_micro_batches", "num_micro_batches (" + n(micro_batches()) +
                                           ") must be divisible by pp (" + n(p_.pp) +
                                           ") with the interleaved schedule (Megatron-LM), or run "
                                           "in micro-batch groups (microbatch_group)");
    }
  }

  // Sequence parallelism shards the sequence dimension over the TP group.
  void check_sequence_parallel() const {
    if (!p_.sequence_parallel) return;
    if (p_.tp == 1) fail("$.plan.sequence_parallel", "requires tp > 1 (got tp 1)");
    if (p_.cp == 1 && m_.seq_len % p_.tp != 0)
      fail("$.plan.sequence_parallel", "seq_len (" + n(m_.seq_len) + ") must be divisible by tp (" +
                                           n(p_.tp) + ") with sequence parallelism");
    // Each cp rank's seq_len / cp tokens are scattered over tp along the sequence dimension.
    if (p_.cp > 1 && (m_.seq_len / p_.cp) % p_.tp != 0)
      fail("$.plan.sequence_parallel", "seq_len / cp (" + n(m_.seq_len) + " / " + n(p_.cp) + " = " +
                                           n(m_.seq_len / p_.cp) + ") must be divisible by tp (" +
                                           n(p_.tp) + ") with sequence parallelism");
  }

  void check_recompute() const {
    if (p_.recompute_layers == 0) return;
    if (p_.recompute != Recompute::full)
      fail("$.plan.recompute_layers", "recompute_layers (" + n(p_.recompute_layers) +
                                          ") requires recompute \"full\" (got \"" +
                                          to_string(p_.recompute) + "\")");
    int64_t per_stage = m_.layers;
    for (int64_t k = 0; k < p_.pp; ++k) per_stage = std::min(per_stage, stage_layers(m_.layers, p_, k));
    if (p_.recompute_layers <= per_stage) return;
    if (p_.first_stage_layers == 0 && p_.last_stage_layers == 0)
      fail("$.plan.recompute_layers", "must be <= layers (" + n(m_.layers) + ") / pp (" + n(p_.pp) +
                                          ") = " + n(per_stage) + " (got " +
                                          n(p_.recompute_layers) + ")");
    fail("$.plan.recompute_layers", "must be <= the layers of the smallest stage (" +
                                        n(per_stage) + " of " + n(m_.layers) + " over pp " +
                                        n(p_.pp) + ") (got " + n(p_.recompute_layers) + ")");
  }

  // Gradient (ZeRO-2) and parameter (ZeRO-3) sharding conflict with pipeline parallelism:
  // DeepSpeed refuses the combination and Megatron-LM shards only optimizer state (ZeRO-1).
  // TorchTitan runs FSDP inside each stage (the stack's pipeline.sharded_stages).
  void check_zero() const {
    if (p_.zero >= 2 && p_.pp > 1 && !j_.pipeline.sharded_stages)
      fail("$.plan.zero", "trainer rule: ZeRO-2/3 not supported with pp > 1 (zero " + n(p_.zero) +
                              ", pp " + n(p_.pp) + ")");
  }

  // What the job's stack can run at all (its capability table, presets/stacks/).
  void check_stack() const {
    if (const auto r = stack_refusal(m_, j_, p_)) fail(r->path, r->rule);
  }

  void check_dtype() const {
    if (c_.gpu.peak(j_.dtype) <= 0)
      fail("$.job.dtype", std::string("GPU \"") + c_.gpu.name + "\" has no " + to_string(j_.dtype) +
                              " math (peak_flops_per_s." + to_string(j_.dtype) + " is absent)");
    // Transformer Engine's MXFP8BlockScaling runs on Blackwell's block-scaled MMA only.
    if (j_.dtype == Dtype::fp8 && !fp8_scaling_supported(j_.fp8.scaling, c_.gpu))
      fail("$.job.framework", "stack \"" + j_.framework + "\" runs fp8 with MXFP8 block scaling, which needs "
                              "Blackwell (compute capability 10 or later), not GPU \"" + c_.gpu.name + "\"");
  }

  void divisible(const char* path, const char* what, int64_t value, const char* by,
                 int64_t divisor) const {
    if (value % divisor != 0)
      fail(path, std::string(what) + " (" + n(value) + ") must be divisible by " + by + " (" +
                     n(divisor) + ")");
  }

  const ModelSpec& m_;
  const ClusterSpec& c_;
  const JobSpec& j_;
  const PlanSpec& p_;
  int64_t gpus_;
  const std::string& source_;
};

}  // namespace

void validate_plan(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                   int64_t gpus, const std::string& source) {
  PlanChecker(m, c, j, p, gpus, source).run();
}

}  // namespace parallax
