// Op lists of one GPT micro-batch on one tensor-parallel rank. Element-wise byte counts assume
// Megatron-LM's fused kernels (bias+GeLU, bias+dropout+add, scale+mask+softmax) and dropout on
// attention probabilities and on both residual branches, as in Korthikanti et al. 2022.
#include "parallax/costmodel/ops.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "op_build.hpp"
#include "parallax/core/gpu_spec.hpp"

namespace parallax {
namespace op_build {


void add_gemm(std::vector<Op>& ops, std::string name, Phase phase, GemmShape g) {
  Op op;
  op.op_class = op_class_of(name);
  op.name = std::move(name);
  op.kind = OpKind::gemm;
  op.phase = phase;
  op.shape = g;
  op.flops = 2 * g.batch * g.m * g.n * g.k;
  // Inputs and output once each in 16-bit; the roofline max() makes this matter only for slim GEMMs.
  op.bytes = 2 * g.batch * (g.m * g.k + g.k * g.n + g.m * g.n);
  ops.push_back(std::move(op));
}

void add_mem(std::vector<Op>& ops, std::string name, Phase phase, double bytes, double flops) {
  Op op;
  op.op_class = op_class_of(name);
  op.name = std::move(name);
  op.kind = OpKind::memory;
  op.phase = phase;
  op.bytes = bytes;
  op.flops = flops;
  ops.push_back(std::move(op));
}

// A linear layer Y[M,N] = X[M,K] W[K,N]: forward, data-grad dX = dY W^T, weight-grad dW = X^T dY.
void add_linear(std::vector<Op>& fwd, std::vector<Op>& bwd, const std::string& name, double m,
                double n, double k) {
  add_gemm(fwd, name, Phase::forward, {1, m, n, k});
  add_gemm(bwd, name + ".dgrad", Phase::backward_data, {1, m, k, n});
  add_gemm(bwd, name + ".wgrad", Phase::backward_weight, {1, k, n, m});
}


LayerDims dims(const ModelSpec& m, const ShardShape& sh) {
  LayerDims L{};
  L.b = static_cast<double>(sh.micro_batch);
  // Queries (and every token-proportional op) on this rank; keys each query may attend to.
  L.s = static_cast<double>(m.seq_len) / static_cast<double>(sh.cp);
  L.s_kv = static_cast<double>(m.seq_len);
  L.h = static_cast<double>(m.hidden);
  L.t = static_cast<double>(sh.tp);
  L.a_local = static_cast<double>(m.heads) / L.t;
  L.kv_local = static_cast<double>(m.kv_head_count()) / L.t;
  L.d = static_cast<double>(m.head_dim());
  L.f_local = static_cast<double>(m.ffn_hidden) / L.t;
  L.n_ln = L.s * L.b * L.h / (sh.sequence_parallel ? L.t : 1.0);
  L.e = sh.act_bytes;
  L.fused = sh.fused_attention;
  L.unpad = sh.attention_unpad;
  L.mask = m.dropout_mask_bytes();
  L.fp8 = sh.fp8;
  L.sp = sh.sequence_parallel;
  L.recipe = sh.fp8_recipe;
  L.eb = elementwise_bytes(m, L.e, sh.eager);
  L.ep = static_cast<double>(sh.ep);
  L.etp = static_cast<double>(sh.etp);
  L.imbalance = sh.moe_imbalance;
  return L;
}

}  // namespace op_build

ElementwiseBytes elementwise_bytes(const ModelSpec& m, double e, bool eager) {
  ElementwiseBytes b{};
  // Fused: a norm reads x and writes y (backward reads x and dy, writes dx); RoPE reads and
  // writes q and k; SwiGLU reads both halves and writes silu(a) * b (backward reads a, b and the
  // gradient and writes both gradients); the fp32 cross-entropy casts, reduces and writes the
  // log-softmax (backward: softmax - one-hot, cast back).
  b.norm_fwd = 2 * e;
  b.norm_bwd = 3 * e;
  b.rope_fwd = 2 * e;
  b.rope_bwd = 2 * e;
  b.swiglu_fwd = 3 * e;
  b.swiglu_bwd = 5 * e;
  b.loss_fwd = e + 4 * 4;
  b.loss_bwd = 4 + 4 + e;
  if (!eager) return b;
  // PyTorch eager, one kernel per op (TorchTitan's Llama, torchtitan/models/llama/model.py).
  // RMSNorm: x.float() (e + 4), pow(2) (4 + 4), mean (4), x * rsqrt(...) (4 + 4), type_as (4 + e),
  // * weight (e + e): 28 + 4e. Its autograd backward: the weight's mul (dx = g*w, dw = sum(g*y):
  // 4e), type_as (e + 4), the rsqrt mul (g*r: 4 + 4; sum(g*x): 4 + 4), pow (4 + 4 + 4), the two
  // paths' sum (4 + 4 + 4), float() (4 + e): 48 + 6e. nn.LayerNorm is one PyTorch kernel each way,
  // as fused.
  if (m.norm == Norm::rmsnorm) {
    b.norm_fwd = 28 + 4 * e;
    b.norm_bwd = 48 + 6 * e;
  }
  // apply_rotary_emb on q and k: float() (e + 4), the complex product (4 + 4), type_as (4 + e);
  // backward the same three in reverse.
  b.rope_fwd = 16 + 2 * e;
  b.rope_bwd = 16 + 2 * e;
  // silu(w1 x) * w3 x: silu (e + e), mul (2e + e); backward: mul (g*b and g*silu(a): 2 x 3e),
  // silu's (a and the gradient in, the gradient out: 3e).
  b.swiglu_fwd = 5 * e;
  b.swiglu_bwd = 9 * e;
  // F.cross_entropy(pred.float()): the cast (e + 4), log_softmax (two passes and the output:
  // 4 + 4 + 4), nll; backward: nll's gradient written (4), log_softmax's (4 + 4 + 4), cast (4 + e).
  b.loss_fwd = 16 + e;
  b.loss_bwd = 20 + e;
  return b;
}

namespace op_build {

// A linear layer of the transformer block: in an fp8 job its three GEMMs run in fp8 and each
// fp8 input is cast first (Fp8Recipe): the activation X [M,K] in forward and the output gradient
// dY [M,N] in backward are read in 16 bits (e) and written as fp8 plus its fp8 transpose (2),
// after a separate amax read (e) under current scaling; the weight [K,N] the same way per micro-
// batch when the recipe casts it there (per iteration: in the optimizer step). With sequence
// parallelism the tensor a TP collective gathers (the column-parallel layer's input, the
// row-parallel layer's output gradient) is cast on this rank's 1/t shard before the gather
// (Transformer Engine's fp8 all-gather of the norm's output; torchao's Float8ColwiseParallel and
// Float8RowwiseParallel).
void add_layer_linear(std::vector<Op>& fwd, std::vector<Op>& bwd, const std::string& name,
                      const LayerDims& L, TpSplit split, double m, double n, double k) {
  const size_t f0 = fwd.size(), b0 = bwd.size();
  add_linear(fwd, bwd, name, m, n, k);
  if (!L.fp8) return;
  fwd[f0].fp8 = bwd[b0].fp8 = bwd[b0 + 1].fp8 = true;
  const double per_elem = fp8_cast_bytes_per_element(L.recipe, L.e);
  const double x = m * k / (L.sp && split == TpSplit::column ? L.t : 1.0);
  const double dy = m * n / (L.sp && split == TpSplit::row ? L.t : 1.0);
  add_mem(fwd, "fp8_cast." + name, Phase::forward, x * per_elem, 2 * x);
  if (L.recipe.weight_cast_per_micro_batch)
    add_mem(fwd, "fp8_cast." + name + ".weight", Phase::forward, k * n * per_elem, 2 * k * n);
  add_mem(bwd, "fp8_cast." + name + ".bwd", Phase::backward_data, dy * per_elem, 2 * dy);
}

// Fused (FlashAttention-2, Dao 2023) attention core on this rank, causal. Forward: QK^T and PV
// over the blocks at or below the diagonal, i.e. half of 2 x (2 b a s^2 d) FLOPs, reading Q, K, V
// and writing O and the fp32 row log-sum-exp, never an s x s tensor. Backward: the scores again
// (recomputed from Q and K), then dV, dP, dQ and dK: five such products, 2.5x the forward, reading
// Q, K, V, O, dO and the log-sum-exp and writing dQ, dK, dV. Costed as batched GEMMs of
// contraction d (their efficiency is the GEMM curve at the head size).
void fused_attention_core(std::vector<Op>& fwd, std::vector<Op>& bwd, const LayerDims& L) {
  // With context parallelism the rank's s/cp queries meet all s keys, block by block as they
  // come round the ring (each block a kernel call of length s/cp: the shape's m); its causal
  // half of the work is 1/cp of the whole under load balancing. The keys and values it reads
  // are every rank's.
  const double q = L.b * L.s * L.a_local * L.d, kv = L.b * L.s_kv * L.kv_local * L.d;
  const double lse = L.b * L.a_local * L.s * 4;
  const GemmShape g{L.b * L.a_local, L.s, L.s, L.d};
  add_gemm(fwd, "attn.flash", Phase::forward, g);
  fwd.back().flops = 2 * L.b * L.a_local * L.s * L.s_kv * L.d;
  fwd.back().bytes = (2 * q + 2 * kv) * L.e + lse;
  add_gemm(bwd, "attn.flash.bwd", Phase::backward_data, g);
  bwd.back().flops = 2.5 * fwd.back().flops;
  bwd.back().bytes = (4 * q + 4 * kv) * L.e + lse;
  if (!L.unpad) return;
  // flash-attn's unpad_input gathers q, k and v into packed copies (each read and written);
  // pad_input scatters the output into a zero-filled tensor (zeros written, the packed output
  // read, the rows written). Backward: the output gradient gathered (read, written), and the
  // q, k, v gradients scattered into zero-filled tensors.
  add_mem(fwd, "attn.unpad", Phase::forward, 2 * (q + 2 * kv) * L.e, 0);
  add_mem(fwd, "attn.pad", Phase::forward, 3 * q * L.e, 0);
  add_mem(bwd, "attn.pad.bwd", Phase::backward_data, 2 * q * L.e, 0);
  add_mem(bwd, "attn.unpad.bwd", Phase::backward_data, 3 * (q + 2 * kv) * L.e, 0);
}

// Forward ops of the attention core (scores, softmax, dropout, context), the part selective
// recompute re-runs. Appended with the given phase.
void attention_core_forward(std::vector<Op>& ops, const LayerDims& L, Phase phase) {
  const double probs = L.b * L.a_local * L.s * L.s_kv;
  add_gemm(ops, "attn.scores", phase, {L.b * L.a_local, L.s, L.s_kv, L.d});
  add_mem(ops, "attn.softmax", phase, probs * 2 * L.e, 5 * probs);
  if (L.mask > 0) add_mem(ops, "attn.dropout", phase, probs * (2 * L.e + L.mask), probs);
  add_gemm(ops, "attn.context", phase, {L.b * L.a_local, L.s, L.d, L.s_kv});
}

// Ops of one layer: at most 16 forward, 18 backward (with RoPE); the planner builds these lists
// for every plan it predicts, so they are allocated once at their size.
constexpr size_t kLayerForwardOps = 16, kLayerBackwardOps = 18;

std::vector<Op> layer_forward(const ModelSpec& m, const LayerDims& L, std::vector<Op>& bwd, bool moe) {
  std::vector<Op> fwd;
  fwd.reserve(kLayerForwardOps);
  bwd.reserve(kLayerBackwardOps);
  const double sb = L.s * L.b;
  const double qkv_n = (L.a_local + 2 * L.kv_local) * L.d;
  const bool swiglu = m.activation == Activation::swiglu;
  const double fc1_n = swiglu ? 2 * L.f_local : L.f_local;

  add_mem(fwd, "ln1", Phase::forward, L.n_ln * L.eb.norm_fwd, 8 * L.n_ln);
  add_mem(bwd, "ln1.bwd", Phase::backward_data, L.n_ln * L.eb.norm_bwd, 12 * L.n_ln);
  add_layer_linear(fwd, bwd, "qkv", L, TpSplit::column, sb, qkv_n, L.h);
  if (m.position == Position::rope) {
    const double qk = sb * (L.a_local + L.kv_local) * L.d;
    add_mem(fwd, "rope", Phase::forward, qk * L.eb.rope_fwd, 3 * qk);
    add_mem(bwd, "rope.bwd", Phase::backward_data, qk * L.eb.rope_bwd, 3 * qk);
  }
  if (L.fused) {
    fused_attention_core(fwd, bwd, L);
  } else {
    attention_core_forward(fwd, L, Phase::forward);
    const double probs = L.b * L.a_local * L.s * L.s_kv;
    // Backward of context = P V: dP = dO V^T and dV = P^T dO; of scores = Q K^T: dQ and dK.
    add_gemm(bwd, "attn.context.dgrad_probs", Phase::backward_data, {L.b * L.a_local, L.s, L.s_kv, L.d});
    add_gemm(bwd, "attn.context.dgrad_v", Phase::backward_data, {L.b * L.a_local, L.s_kv, L.d, L.s});
    if (L.mask > 0)
      add_mem(bwd, "attn.dropout.bwd", Phase::backward_data, probs * (2 * L.e + L.mask), probs);
    add_mem(bwd, "attn.softmax.bwd", Phase::backward_data, probs * 3 * L.e, 4 * probs);
    add_gemm(bwd, "attn.scores.dgrad_q", Phase::backward_data, {L.b * L.a_local, L.s, L.d, L.s_kv});
    add_gemm(bwd, "attn.scores.dgrad_k", Phase::backward_data, {L.b * L.a_local, L.s_kv, L.d, L.s});
  }
  add_layer_linear(fwd, bwd, "proj", L, TpSplit::row, sb, L.h, L.a_local * L.d);
  add_mem(fwd, "bias_dropout_add1", Phase::forward, L.n_ln * (3 * L.e + L.mask), 3 * L.n_ln);
  add_mem(bwd, "bias_dropout_add1.bwd", Phase::backward_data, L.n_ln * (2 * L.e + L.mask), L.n_ln);
  add_mem(fwd, "ln2", Phase::forward, L.n_ln * L.eb.norm_fwd, 8 * L.n_ln);
  add_mem(bwd, "ln2.bwd", Phase::backward_data, L.n_ln * L.eb.norm_bwd, 12 * L.n_ln);
  if (moe) {
    add_moe_ffn(fwd, bwd, m, L);
  } else {
    add_layer_linear(fwd, bwd, "fc1", L, TpSplit::column, sb, fc1_n, L.h);
    const double ff = sb * L.f_local;
    if (swiglu) {
      add_mem(fwd, "swiglu", Phase::forward, ff * L.eb.swiglu_fwd, 6 * ff);
      add_mem(bwd, "swiglu.bwd", Phase::backward_data, ff * L.eb.swiglu_bwd, 10 * ff);
    } else {
      add_mem(fwd, "bias_gelu", Phase::forward, ff * 2 * L.e, 10 * ff);
      add_mem(bwd, "bias_gelu.bwd", Phase::backward_data, ff * 3 * L.e, 14 * ff);
    }
    add_layer_linear(fwd, bwd, "fc2", L, TpSplit::row, sb, L.h, L.f_local);
  }
  add_mem(fwd, "bias_dropout_add2", Phase::forward, L.n_ln * (3 * L.e + L.mask), 3 * L.n_ln);
  add_mem(bwd, "bias_dropout_add2.bwd", Phase::backward_data, L.n_ln * (2 * L.e + L.mask), L.n_ln);
  return fwd;
}

CommOp comm(const std::string& name, CommKind kind, Phase phase, double bytes) {
  return CommOp{name, kind, phase, bytes};
}

// The conjugate pair around one column-parallel + row-parallel block: forward all-reduce after the
// row-parallel GEMM, backward all-reduce before the column-parallel GEMM's input grad. With
// sequence parallelism each all-reduce becomes reduce-scatter + all-gather of the same volume.
void add_tp_pair(std::vector<CommOp>& out, const std::string& name, Phase fwd_phase, double bytes,
                 bool sp, bool with_backward) {
  if (sp) {
    out.push_back(comm(name + ".ag", CommKind::tp_all_gather, fwd_phase, bytes));
    out.push_back(comm(name + ".rs", CommKind::tp_reduce_scatter, fwd_phase, bytes));
    if (with_backward) {
      out.push_back(comm(name + ".bwd.ag", CommKind::tp_all_gather, Phase::backward_data, bytes));
      out.push_back(comm(name + ".bwd.rs", CommKind::tp_reduce_scatter, Phase::backward_data, bytes));
    }
  } else {
    out.push_back(comm(name + ".ar", CommKind::tp_all_reduce, fwd_phase, bytes));
    if (with_backward) {
      out.push_back(comm(name + ".bwd.ar", CommKind::tp_all_reduce, Phase::backward_data, bytes));
    }
  }
}

}  // namespace op_build

using namespace op_build;

const char* op_class_of(const std::string& n) {
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  const bool bwd = n.find(".bwd") != std::string::npos || n.find(".dgrad_") != std::string::npos;
  if (starts("attn.flash")) return bwd ? "flash_attention.bwd" : "flash_attention";
  if (starts("attn.")) return bwd ? "attention.bwd" : "attention";
  if (starts("ln") || starts("final_ln")) return bwd ? "norm.bwd" : "norm";
  if (starts("bias_gelu") || starts("swiglu")) return bwd ? "activation.bwd" : "activation";
  if (starts("bias_dropout_add")) return bwd ? "residual.bwd" : "residual";
  if (starts("rope")) return bwd ? "rope.bwd" : "rope";
  if (starts("embedding")) return bwd ? "embedding.bwd" : "embedding";
  if (starts("cross_entropy")) return "cross_entropy";
  if (starts("fp8_cast")) return bwd ? "fp8_cast.bwd" : "fp8_cast";
  // MoE: the routed and shared experts' kernels by what they are (moe.swiglu is an activation,
  // moe.fc1 a GEMM); the router's scores and top-k, and the token (un)permutation, their own.
  if (starts("moe.router_topk")) return bwd ? "router.bwd" : "router";
  if (starts("moe.permute") || starts("moe.unpermute")) return bwd ? "permute.bwd" : "permute";
  if (starts("moe.")) return op_class_of(n.substr(4));
  return "gemm";
}

double fp8_cast_bytes_per_element(const Fp8Recipe& r, double e) {
  switch (r.scaling) {
    case Fp8Scaling::delayed: return e + 2;
    case Fp8Scaling::current: return e + 2 + e;  // the amax pass reads the tensor first
    case Fp8Scaling::mxfp8: return e + 2 + 2.0 / 32;  // both copies' E8M0 scale per 32 elements
  }
  return e + 2;
}

double GemmShape::min_dim() const { return std::min({m, n, k}); }

double shard_tokens(const ModelSpec& m, const ShardShape& s) {
  return static_cast<double>(s.micro_batch * m.seq_len) / static_cast<double>(s.cp);
}

int64_t padded_vocab(int64_t vocab, int64_t tp) {
  const int64_t multiple = 128 * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

ShardShape shard_shape(const ModelSpec& m, const JobSpec& j, const PlanSpec& p) {
  ShardShape s;
  s.micro_batch = p.micro_batch;
  s.tp = p.tp;
  s.cp = p.cp;
  s.sequence_parallel = p.sequence_parallel;
  // fp32/tf32 training keeps fp32 activations; 16- and 8-bit training keeps 16-bit activations.
  s.act_bytes = (j.dtype == Dtype::fp32 || j.dtype == Dtype::tf32) ? 4.0 : 2.0;
  s.padded_vocab = padded_vocab(m.vocab, p.tp);
  s.fused_attention = j.attention == Attention::fused;
  s.attention_unpad = s.fused_attention && j.attention_unpad;
  s.eager = j.kernels == Kernels::eager;
  s.fp8 = j.dtype == Dtype::fp8;
  s.fp8_recipe = j.fp8;
  s.selective = j.selective;
  s.ep = p.ep;
  s.etp = expert_tp(p);
  s.moe_imbalance = j.moe_imbalance;
  s.moe_dispatcher = p.moe_dispatcher;
  return s;
}

std::vector<LayerMatmul> layer_matmuls(const ModelSpec& m, int64_t tp) {
  const double t = static_cast<double>(tp), h = static_cast<double>(m.hidden);
  const double d = static_cast<double>(m.head_dim());
  const double q = static_cast<double>(m.heads) * d / t, kv = static_cast<double>(m.kv_head_count()) * d / t;
  const double f = static_cast<double>(m.ffn_hidden) / t;
  std::vector<LayerMatmul> out{{"q", q, h, false}, {"k", kv, h, false}, {"v", kv, h, false},
                               {"o", h, q, true}};
  if (m.activation == Activation::swiglu)
    out.insert(out.end(), {{"w1", f, h, false}, {"w3", f, h, false}, {"w2", h, f, true}});
  else
    out.insert(out.end(), {{"fc1", f, h, false}, {"fc2", h, f, true}});
  return out;
}

namespace {

// TorchTitan's op-level selective recompute, in backward: every element-wise op of the forward
// again (norms, rotary embedding, activation, residual adds; the attention kernel's output is
// saved), and the 2nd, 4th, ... matmuls (layer_matmuls). `ops` holds the layer's forward.
void alternate_matmul_recompute(const ModelSpec& m, const LayerDims& L, int64_t tp,
                                std::vector<Op>& ops) {
  const size_t forward = ops.size();
  for (size_t i = 0; i < forward; ++i) {
    const Op& op = ops[i];
    const std::string_view c = op.op_class;
    if (op.kind != OpKind::memory || c.starts_with("attention") || c.starts_with("fp8_cast")) continue;
    Op again = op;
    again.phase = Phase::recompute;
    ops.push_back(again);
  }
  // The recompute stops once the tensors backward needs exist (torch.utils.checkpoint's
  // early_stop): a last matmul, whose output no backward reads, is not re-run.
  const std::vector<LayerMatmul> mm = layer_matmuls(m, tp);
  for (size_t i = 1; i + 1 < mm.size(); i += 2) {
    const std::string name = std::string(mm[i].name) + ".recompute";
    add_gemm(ops, name, Phase::recompute, {1, L.s * L.b, mm[i].n, mm[i].k});
    ops.back().fp8 = L.fp8;
    if (!L.fp8) continue;
    // Its input cast again (each PyTorch linear casts its own input), and its weight's when the
    // recipe casts weights per micro-batch.
    const double per_elem = fp8_cast_bytes_per_element(L.recipe, L.e);
    const double x = L.s * L.b * mm[i].k;
    add_mem(ops, "fp8_cast." + name, Phase::recompute, x * per_elem, 2 * x);
    if (L.recipe.weight_cast_per_micro_batch) {
      const double w = mm[i].n * mm[i].k;
      add_mem(ops, "fp8_cast." + name + ".weight", Phase::recompute, w * per_elem, 2 * w);
    }
  }
}

}  // namespace

std::vector<Op> layer_ops(const ModelSpec& m, const ShardShape& s, Recompute recompute, bool moe) {
  const LayerDims L = dims(m, s);
  std::vector<Op> bwd;
  std::vector<Op> ops = layer_forward(m, L, bwd, moe);
  ops.reserve(2 * ops.size() + bwd.size());
  if (recompute == Recompute::full) {
    std::vector<Op> unused;
    for (Op op : layer_forward(m, L, unused, moe)) {
      op.phase = Phase::recompute;
      ops.push_back(op);
    }
  } else if (recompute == Recompute::selective && s.selective == SelectiveRecompute::alternate_matmuls) {
    alternate_matmul_recompute(m, L, s.tp, ops);
  } else if (recompute == Recompute::selective && !L.fused) {
    // Fused attention stores no s x s tensor: selective recompute has nothing to re-run.
    attention_core_forward(ops, L, Phase::recompute);
  }
  ops.insert(ops.end(), std::make_move_iterator(bwd.begin()), std::make_move_iterator(bwd.end()));
  return ops;
}

std::vector<CommOp> layer_comm(const ModelSpec& m, const ShardShape& s, Recompute recompute, bool moe) {
  std::vector<CommOp> out;
  if (s.tp == 1) return out;
  const double bytes = shard_tokens(m, s) * static_cast<double>(m.hidden) * s.act_bytes;
  // An MoE layer's routed experts exchange tokens over the expert groups (moe_layer_comm); only
  // its shared experts, a dense MLP split over tp, gather and reduce-scatter over TP.
  const bool mlp = !moe || m.moe.shared_experts > 0;
  add_tp_pair(out, "attn", Phase::forward, bytes, s.sequence_parallel, true);
  if (mlp) add_tp_pair(out, "mlp", Phase::forward, bytes, s.sequence_parallel, true);
  if (recompute == Recompute::full) {
    add_tp_pair(out, "attn.recompute", Phase::recompute, bytes, s.sequence_parallel, false);
    if (mlp) add_tp_pair(out, "mlp.recompute", Phase::recompute, bytes, s.sequence_parallel, false);
  }
  return out;
}

std::vector<Op> embedding_ops(const ModelSpec& m, const ShardShape& s) {
  std::vector<Op> ops;
  const double sbh = shard_tokens(m, s) * static_cast<double>(m.hidden);
  const double e = s.act_bytes;
  // Vocab-parallel lookup writes s*b*h, then position add and embedding dropout.
  add_mem(ops, "embedding.lookup", Phase::forward, sbh * (e + 4.0 / static_cast<double>(m.hidden)), 0);
  add_mem(ops, "embedding.dropout", Phase::forward, sbh * (3 * e + m.dropout_mask_bytes()), 2 * sbh);
  // Backward scatter-adds the incoming gradient into the fp32 embedding gradient.
  add_mem(ops, "embedding.bwd", Phase::backward_weight, sbh * (2 * e + 4), sbh);
  return ops;
}

std::vector<CommOp> embedding_comm(const ModelSpec& m, const ShardShape& s) {
  std::vector<CommOp> out;
  if (s.tp == 1) return out;
  const double bytes = shard_tokens(m, s) * static_cast<double>(m.hidden) * s.act_bytes;
  // Vocab-parallel embedding: all-reduce of the looked-up rows (reduce-scatter with SP).
  out.push_back(comm("embedding.ar", s.sequence_parallel ? CommKind::tp_reduce_scatter
                                                         : CommKind::tp_all_reduce,
                     Phase::forward, bytes));
  return out;
}

std::vector<Op> head_ops(const ModelSpec& m, const ShardShape& s) {
  std::vector<Op> ops;
  const double sb = shard_tokens(m, s);
  const double h = static_cast<double>(m.hidden);
  const double v_local = static_cast<double>(s.padded_vocab) / static_cast<double>(s.tp);
  const double n_ln = sb * h / (s.sequence_parallel ? static_cast<double>(s.tp) : 1.0);
  const ElementwiseBytes eb = elementwise_bytes(m, s.act_bytes, s.eager);
  add_mem(ops, "final_ln", Phase::forward, n_ln * eb.norm_fwd, 8 * n_ln);
  add_mem(ops, "final_ln.bwd", Phase::backward_data, n_ln * eb.norm_bwd, 12 * n_ln);
  std::vector<Op> bwd;
  add_linear(ops, bwd, "logits", sb, v_local, h);
  // Vocab-parallel cross-entropy in fp32: cast, max, exp-sum, log-softmax and loss (Megatron-LM
  // vocab_parallel_cross_entropy), then the gradient softmax - one_hot cast back to 16 bits.
  const double logits = sb * v_local;
  add_mem(ops, "cross_entropy", Phase::forward, logits * eb.loss_fwd, 6 * logits);
  add_mem(ops, "cross_entropy.bwd", Phase::backward_data, logits * eb.loss_bwd, 2 * logits);
  ops.insert(ops.end(), bwd.begin(), bwd.end());
  return ops;
}

std::vector<CommOp> head_comm(const ModelSpec& m, const ShardShape& s) {
  std::vector<CommOp> out;
  if (s.tp == 1) return out;
  const double bytes = shard_tokens(m, s) * static_cast<double>(m.hidden) * s.act_bytes;
  const double sb = shard_tokens(m, s);
  if (s.sequence_parallel) {
    out.push_back(comm("logits.ag", CommKind::tp_all_gather, Phase::forward, bytes));
    out.push_back(comm("logits.bwd.rs", CommKind::tp_reduce_scatter, Phase::backward_data, bytes));
  } else {
    // Column-parallel logits: all-reduce of the input gradient in backward.
    out.push_back(comm("logits.bwd.ar", CommKind::tp_all_reduce, Phase::backward_data, bytes));
  }
  // Cross-entropy: all-reduces of the max, the exp-sum and the target logit (fp32 per token).
  out.push_back(comm("cross_entropy.ar", CommKind::tp_all_reduce, Phase::forward, 3 * 4 * sb));
  return out;
}

double total_flops(const std::vector<Op>& ops, bool include_recompute) {
  double f = 0;
  for (const Op& op : ops) {
    if (op.kind != OpKind::gemm) continue;  // FLOP conventions count matrix multiplies only
    if (op.phase == Phase::recompute && !include_recompute) continue;
    f += op.flops;
  }
  return f;
}

}  // namespace parallax
