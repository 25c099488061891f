#include "parallax/costmodel/memory.hpp"

#include <algorithm>

#include "parallax/core/param_counts.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {

ParamBytes param_bytes(ParamBytesConvention c) {
  switch (c) {
    case ParamBytesConvention::b16: return {2, 2, 12};
    case ParamBytesConvention::b18: return {2, 4, 12};
    case ParamBytesConvention::b20: return {2, 6, 12};
  }
  return {2, 4, 12};
}

double layer_params_per_rank(const ModelSpec& m, int64_t tp) {
  const double t = static_cast<double>(tp);
  const double h = static_cast<double>(m.hidden);
  const double d = static_cast<double>(m.head_dim());
  const double qkv_out = static_cast<double>(m.heads + 2 * m.kv_head_count()) * d;
  const double q_width = static_cast<double>(m.heads) * d;  // the projection's input
  const double f = static_cast<double>(m.ffn_hidden);
  const double fc1_out = m.activation == Activation::swiglu ? 2 * f : f;
  const double norm = m.norm == Norm::layernorm ? 2 * h : h;
  const double bias = m.linear_bias ? 1 : 0;  // Llama-family models have none
  // Column-parallel QKV and FC1 shard weights and biases; row-parallel projection and FC2 shard
  // weights, replicate biases; norms are replicated.
  return (h * qkv_out + bias * qkv_out + q_width * h + h * fc1_out + bias * fc1_out + f * h) / t +
         bias * 2 * h + 2 * norm;
}

namespace {

// A dense MLP of width `width` split over t ranks: column-parallel fc1 (weights and biases),
// row-parallel fc2 (weights; its bias replicated).
double mlp_params_per_rank(const ModelSpec& m, double width, double t) {
  const double h = static_cast<double>(m.hidden);
  const double fc1_out = m.activation == Activation::swiglu ? 2 * width : width;
  const double bias = m.linear_bias ? 1 : 0;
  return (h * fc1_out + bias * fc1_out + width * h) / t + bias * h;
}

}  // namespace

MoeLayerParams moe_layer_params_per_rank(const ModelSpec& m, const PlanSpec& p) {
  MoeLayerParams out;
  if (!m.is_moe()) return out;
  const double t = static_cast<double>(p.tp);
  const double shared = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
  out.dense = layer_params_per_rank(m, p.tp) - mlp_params_per_rank(m, static_cast<double>(m.ffn_hidden), t) +
              router_params(m) + (shared > 0 ? mlp_params_per_rank(m, shared, t) : 0);
  out.expert = static_cast<double>(m.moe.num_experts / p.ep) * ffn_params(m, m.moe.expert_ffn_hidden) /
               static_cast<double>(expert_tp(p));
  return out;
}

int64_t stage_moe_layers(const ModelSpec& m, const PlanSpec& p, int64_t stage) {
  if (!m.is_moe()) return 0;
  int64_t n = 0;
  for (int64_t l : stage_layer_ids(m.layers, p, stage)) n += m.is_moe_layer(l) ? 1 : 0;
  return n;
}

double stage_expert_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage) {
  return static_cast<double>(stage_moe_layers(m, p, stage)) * moe_layer_params_per_rank(m, p).expert;
}

double stage_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage) {
  const auto moe = static_cast<double>(stage_moe_layers(m, p, stage));
  const double layers = static_cast<double>(stage_layers(m.layers, p, stage)) - moe;
  const MoeLayerParams ml = moe_layer_params_per_rank(m, p);
  double params = layers * layer_params_per_rank(m, p.tp) + moe * (ml.dense + ml.expert);
  const double h = static_cast<double>(m.hidden);
  const double vocab_local =
      static_cast<double>(padded_vocab(m.vocab, p.tp)) / static_cast<double>(p.tp) * h;
  if (stage == 0) {
    params += vocab_local;
    if (m.position == Position::learned) params += static_cast<double>(m.seq_len) * h;
  }
  if (stage == p.pp - 1) {
    params += m.norm == Norm::layernorm ? 2 * h : h;
    // The output layer: its own weights when untied; with tied embeddings and pp > 1 Megatron-LM
    // keeps a copy of the word embeddings on the last stage (synchronised by an all-reduce).
    if (!m.tied_embeddings || p.pp > 1) params += vocab_local;
  }
  return params;
}

double stage_non_layer_params_per_rank(const ModelSpec& m, const PlanSpec& p, int64_t stage) {
  const auto moe = static_cast<double>(stage_moe_layers(m, p, stage));
  const double layers = static_cast<double>(stage_layers(m.layers, p, stage)) - moe;
  const MoeLayerParams ml = moe_layer_params_per_rank(m, p);
  return std::max(0.0, stage_params_per_rank(m, p, stage) - layers * layer_params_per_rank(m, p.tp) -
                           moe * (ml.dense + ml.expert));
}

namespace {

// Bytes per 16-bit token TorchTitan's op-level selective recompute keeps for one layer.
double alternate_matmul_stash(const ModelSpec& m, int64_t tp, bool sp) {
  const double t = static_cast<double>(tp), h = static_cast<double>(m.hidden);
  const double whole = sp ? h / t : h;
  double kept = whole + static_cast<double>(m.heads) * static_cast<double>(m.head_dim()) / t;
  const std::vector<LayerMatmul> mm = layer_matmuls(m, tp);
  for (size_t i = 0; i < mm.size(); i += 2) kept += mm[i].row_parallel ? whole : mm[i].n;
  return 2 * kept + 4 * static_cast<double>(m.heads) / t;
}

}  // namespace

double tp_sharded_bytes_per_token(const ModelSpec& m, Kernels kernels) {
  // Queries and the attention output, heads * head_dim wide (hidden unless head_dim is decoupled).
  const double q = static_cast<double>(m.heads * m.head_dim());
  const double kv = static_cast<double>(m.kv_head_count() * m.head_dim());
  const double f = static_cast<double>(m.ffn_hidden);
  const double mlp = m.activation == Activation::swiglu ? (kernels == Kernels::eager ? 8 : 6) * f
                                                         : 4 * f;
  return 4 * q + 4 * kv + mlp;
}

double layer_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t tp, bool sp,
                              Recompute r, Attention attention, SelectiveRecompute policy,
                              Kernels kernels) {
  const double s = static_cast<double>(m.seq_len);
  const double b = static_cast<double>(micro_batch);
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double t = static_cast<double>(tp);
  const double sbh = s * b * h;
  if (r == Recompute::selective && policy == SelectiveRecompute::alternate_matmuls)
    return s * b * alternate_matmul_stash(m, tp, sp);
  // Dropout masks, one byte per element: after attention's softmax and on both residual branches
  // (2 s b h of Korthikanti's 34, kept whole without SP). None when the model has no dropout.
  const double mask = m.dropout_mask_bytes();
  // Unfused: softmax output, dropout mask and output per head (the softmax output alone without
  // dropout); fused: the log-sum-exp per row.
  const double attn = attention == Attention::fused ? 4 * a / h : (2 + 3 * mask) * a * s / h;
  const double sharded = tp_sharded_bytes_per_token(m, kernels) / h;  // 24 for GPT
  const double replicated = 8 + 2 * mask, kept = replicated + sharded;
  switch (r) {
    case Recompute::none:
      return sp ? sbh / t * (kept + attn) : sbh * (replicated + sharded / t + attn / t);
    case Recompute::selective:
      return sp ? sbh / t * kept : sbh * (replicated + sharded / t);
    case Recompute::full:
      return sp ? 2 * sbh / t : 2 * sbh;
  }
  return 0;
}

double in_flight_micro_batches(const PlanSpec& p, int64_t stage) {
  const double m = static_cast<double>(p.num_micro_batches);
  switch (p.schedule) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min(static_cast<double>(p.pp - stage), m);
    case Schedule::interleaved: {
      // Megatron-LM: warm-up runs (pp - k - 1) * 2 + (vpp - 1) * N chunk forwards, N the
      // micro-batch group (pp by default), then one more before the first backward; each chunk
      // holds 1/vpp of the stage's layers. With m == pp it runs every forward first
      // (all_warmup_microbatches), so every chunk is in flight.
      const double total = m * static_cast<double>(p.vpp);
      if (p.num_micro_batches == p.pp) return m;
      const double chunks = static_cast<double>((p.pp - stage - 1) * 2 +
                                                (p.vpp - 1) * microbatch_group_size(p) + 1);
      return std::min(chunks, total) / static_cast<double>(p.vpp);
    }
  }
  return m;
}

double layer_activation_bytes(const ModelSpec& m, const JobSpec& j, const PlanSpec& p, Recompute r) {
  // Context parallelism: each rank keeps the activations of its seq_len / cp tokens (fused
  // attention, which validate_plan requires with cp: its per-row log-sum-exp does not grow with
  // the keys).
  return layer_activation_bytes(m, p.micro_batch, p.tp, p.sequence_parallel, r, j.attention,
                                j.selective, j.kernels) /
         static_cast<double>(p.cp);
}

double moe_ffn_extra_activation_bytes(const ModelSpec& m, const JobSpec& j, const PlanSpec& p) {
  if (!m.is_moe()) return 0;
  const ShardShape sh = shard_shape(m, j, p);
  const MoeLayerComm c = moe_layer_comm(m, sh);
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(p.tp);
  const double etp = static_cast<double>(expert_tp(p)), k = static_cast<double>(m.moe.top_k);
  const double rows = etp * c.tokens * k * j.moe_imbalance;
  // Bytes per token of a dense MLP of width w's hidden tensors (tp_sharded_bytes_per_token's MLP).
  auto mlp = [&](double w) {
    return m.activation == Activation::swiglu ? (j.kernels == Kernels::eager ? 8 : 6) * w : 4 * w;
  };
  const double sb = shard_tokens(m, sh);
  const double shared = static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden);
  const double moe = c.tokens * 4 * static_cast<double>(m.moe.num_experts) +
                     rows * (2 * h + mlp(static_cast<double>(m.moe.expert_ffn_hidden) / etp)) +
                     c.tokens * k * 2 * h + sb * mlp(shared) / t;
  return moe - sb * mlp(static_cast<double>(m.ffn_hidden)) / t;
}

double stage_activation_bytes_per_micro_batch(const ModelSpec& m, const JobSpec& j,
                                              const PlanSpec& p, int64_t stage) {
  const double e_scale = shard_shape(m, j, p).act_bytes / 2;  // Korthikanti assumes 16-bit
  const int64_t layers = stage_layers(m.layers, p, stage);
  const int64_t recomputed =
      p.recompute == Recompute::full && p.recompute_layers > 0 ? p.recompute_layers : layers;
  const double per_layer_kept = layer_activation_bytes(m, j, p, p.recompute);
  const double per_layer_full = layer_activation_bytes(m, j, p, Recompute::none);
  const double stash = p.recompute == Recompute::full
                           ? static_cast<double>(recomputed) * per_layer_kept +
                                 static_cast<double>(layers - recomputed) * per_layer_full
                           : static_cast<double>(layers) * per_layer_kept;
  // MoE layers keep their FFN's tensors unless fully recomputed (the recomputed layers first).
  const int64_t moe_layers = stage_moe_layers(m, p, stage);
  const int64_t moe_kept = p.recompute == Recompute::full
                               ? std::max<int64_t>(0, moe_layers - recomputed)
                               : moe_layers;
  return (stash + static_cast<double>(moe_kept) * moe_ffn_extra_activation_bytes(m, j, p)) * e_scale;
}

std::vector<StageMemory> stage_memory(const ModelSpec& m, const JobSpec& j, const PlanSpec& plan) {
  PlanSpec p = plan;
  p.zero = zero_stage_run(j, plan);  // the sharding the stack runs (TorchTitan's FSDP with pp)
  const ParamBytes pb = param_bytes(j.bytes_per_param);
  // Weights are replicated over cp as over dp: ZeRO shards over both (grad_ranks).
  const double dp = static_cast<double>(grad_ranks(p));
  const ShardShape sh = shard_shape(m, j, p);
  const double e_scale = sh.act_bytes / 2;  // Korthikanti's formulas assume 16-bit activations
  const double per_layer_kept = layer_activation_bytes(m, j, p, p.recompute);
  const double per_layer_full = layer_activation_bytes(m, j, p, Recompute::none);

  const double t = static_cast<double>(p.tp);
  const double sb = shard_tokens(m, sh);  // this rank's tokens of a micro-batch (÷ cp)
  const double sbh = sb * static_cast<double>(m.hidden);
  const double v_local = static_cast<double>(sh.padded_vocab) / t;

  std::vector<StageMemory> out;
  for (int64_t k = 0; k < p.pp; ++k) {
    StageMemory sm;
    sm.stage = k;
    sm.params = stage_params_per_rank(m, p, k);
    sm.expert_params = stage_expert_params_per_rank(m, p, k);
    // ZeRO shards the routed experts' state over the ranks that hold the same experts.
    const double dense = sm.params - sm.expert_params, experts = sm.expert_params;
    const double edp = static_cast<double>(expert_grad_ranks(p));
    auto sharded = [&](double bytes_per_param, int64_t from_stage) {
      return dense * bytes_per_param / (p.zero >= from_stage ? dp : 1) +
             experts * bytes_per_param / (p.zero >= from_stage ? edp : 1);
    };
    sm.weights_bytes = sharded(pb.weights, 3);
    sm.grads_bytes = sharded(pb.grads, 2);
    sm.optimizer_bytes = sharded(pb.optimizer, 1);
    sm.activations_bytes =
        stage_activation_bytes_per_micro_batch(m, j, p, k) * in_flight_micro_batches(p, k);

    double buffers = 0;
    // Recompute working set: one layer's activations rebuilt during its backward.
    if (p.recompute == Recompute::full) buffers += (per_layer_full - per_layer_kept) * e_scale;
    if (p.recompute == Recompute::selective) {
      buffers += (per_layer_full - per_layer_kept) * e_scale;
    }
    // TP all-reduce output and pipeline send/receive buffers (forward and backward).
    buffers += sbh * sh.act_bytes;
    if (p.pp > 1) buffers += 4 * sbh * sh.act_bytes / t;
    // Embedding output and its dropout mask.
    if (k == 0) buffers += sbh * (sh.act_bytes + m.dropout_mask_bytes());
    // MoE: the dispatched token rows' send and receive buffers of the all-to-all.
    if (stage_moe_layers(m, p, k) > 0 && p.ep > 1) buffers += 2 * moe_layer_comm(m, sh).a2a_bytes;
    // The loss at its peak: what the stack holds per logit (presets/stacks/, "loss"), with
    // 16-bit logits; wider activations widen the logits.
    if (k == p.pp - 1) buffers += sb * v_local * (j.loss_bytes_per_logit + sh.act_bytes - 2);
    if (p.zero >= 3 && grad_ranks(p) > 1) {
      // ZeRO-3 / FSDP: the layer being computed and the one prefetched are whole (16-bit weights),
      // one layer's full gradients wait for their reduce-scatter, and the unit outside the layers
      // (embeddings, head) stays gathered through the micro-batch.
      const double layer = layer_params_per_rank(m, p.tp);
      const double root = stage_non_layer_params_per_rank(m, p, k);
      buffers += (2 * layer + root) * pb.weights + layer * pb.grads;
    }
    sm.buffers_bytes = buffers;
    out.push_back(sm);
  }
  return out;
}

}  // namespace parallax
