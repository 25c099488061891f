// Counted GEMM FLOPs against the closed forms of Narayanan et al. 2021 (Eq. 3 and its
// no-recompute variant), which are derived independently of our op list.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/predict.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

ModelSpec gpt(int64_t L, int64_t h, int64_t a, int64_t s, int64_t V) {
  return test::gpt_shape("test", L, h, a, 4 * h, s, V);
}

PlanSpec plan(int64_t tp, int64_t pp, int64_t dp, int64_t mbs, int64_t m, Recompute r) {
  return test::PlanBuilder(tp, pp, dp).batches(mbs, m).recompute(r);
}

}  // namespace

TEST_CASE("counted model FLOPs equal 72 B s L h^2 (1 + s/6h + V/12Lh)") {
  // Vocab a multiple of 128 * tp so that Megatron-LM's padding does not add work.
  const ModelSpec m = gpt(24, 2048, 16, 2048, 51200);
  const PlanSpec p = plan(4, 2, 2, 2, 8, Recompute::none);
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const EfficiencyProfile prof = load_profile(c.profile);
  const Prediction pr = predict(m, c, JobSpec{}, p, prof);
  const int64_t B = 2 * 8 * 2;
  const double s = 2048, L = 24, h = 2048, V = 51200;
  const double expected = 72.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  CHECK(pr.model_flops == Approx(expected).epsilon(1e-12));
  CHECK(model_flops_closed_form(m, B) == Approx(expected).epsilon(1e-12));
  CHECK(pr.hardware_flops == Approx(pr.model_flops).epsilon(1e-12));
}

TEST_CASE("full recompute FLOPs equal Megatron-LM's 96 B s L h^2 (1 + s/6h + V/16Lh)") {
  const ModelSpec m = gpt(8, 1024, 8, 1024, 51200);
  const PlanSpec p = plan(2, 1, 4, 4, 3, Recompute::full);
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  const Prediction pr = predict(m, c, JobSpec{}, p, load_profile(c.profile));
  const int64_t B = 4 * 3 * 4;
  const double s = 1024, L = 8, h = 1024, V = 51200;
  const double expected = 96.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  CHECK(pr.hardware_flops == Approx(expected).epsilon(1e-12));
  CHECK(megatron_flops_closed_form(m, B) == Approx(expected).epsilon(1e-12));
}

TEST_CASE("selective recompute re-runs exactly the attention score and context GEMMs") {
  const ModelSpec m = gpt(4, 1024, 16, 2048, 1024);
  ShardShape sh;
  sh.micro_batch = 2;
  sh.tp = 2;
  sh.padded_vocab = 1024;
  const auto none = layer_ops(m, sh, Recompute::none);
  const auto sel = layer_ops(m, sh, Recompute::selective);
  // Q K^T and P V on this rank: 2 GEMMs of 2 * b * (a/t) * s^2 * d FLOPs each.
  const double b = 2, at = 8, s = 2048, d = 64;
  CHECK(total_flops(sel, true) - total_flops(none, true) == Approx(2 * 2 * b * at * s * s * d));
}

TEST_CASE("backward GEMM FLOPs are counted per GEMM: data grad + weight grad = 2x forward") {
  const ModelSpec m = gpt(2, 512, 8, 256, 1024);
  ShardShape sh;
  sh.micro_batch = 1;
  sh.tp = 1;
  sh.padded_vocab = 1024;
  double fwd = 0, bwd = 0;
  int dgrad = 0, wgrad = 0;
  for (const Op& op : layer_ops(m, sh, Recompute::none)) {
    if (op.kind != OpKind::gemm) continue;
    (op.phase == Phase::forward ? fwd : bwd) += op.flops;
    dgrad += op.phase == Phase::backward_data;
    wgrad += op.phase == Phase::backward_weight;
  }
  CHECK(bwd == Approx(2 * fwd));
  CHECK(wgrad == 4);  // qkv, proj, fc1, fc2
  CHECK(dgrad == 8);  // those four + dQ, dK, dP, dV
}

TEST_CASE("SwiGLU and GQA change the counted FLOPs as their shapes say") {
  ModelSpec m = gpt(1, 4096, 32, 1024, 32000);
  m.kv_heads = 8;
  m.activation = Activation::swiglu;
  m.ffn_hidden = 11008;
  ShardShape sh;
  sh.micro_batch = 1;
  sh.tp = 1;
  sh.padded_vocab = 32000;
  double fwd = 0;
  for (const Op& op : layer_ops(m, sh, Recompute::none)) {
    if (op.kind == OpKind::gemm && op.phase == Phase::forward) fwd += op.flops;
  }
  const double s = 1024, h = 4096, f = 11008, kvd = 8 * 128;
  const double qkv = 2 * s * h * (h + 2 * kvd);
  const double attn = 2 * 2 * s * s * h;
  const double proj = 2 * s * h * h;
  const double mlp = 3 * 2 * s * h * f;
  CHECK(fwd == Approx(qkv + attn + proj + mlp));
}

TEST_CASE("without dropout a layer moves no masks: the bytes differ by the masks alone") {
  ModelSpec m = gpt(4, 1024, 16, 2048, 1024);
  ShardShape sh;
  sh.micro_batch = 2;
  sh.tp = 2;
  sh.padded_vocab = 1024;
  auto bytes = [](const std::vector<Op>& ops) {
    double sum = 0;
    for (const Op& op : ops) sum += op.bytes;
    return sum;
  };
  const auto with = layer_ops(m, sh, Recompute::none);
  m.dropout = 0;
  const auto without = layer_ops(m, sh, Recompute::none);
  // Unfused attention: the dropout over b (a/t) s^2 probabilities goes, forward and backward,
  // each reading and writing 2-byte elements and a 1-byte mask: 2 * 5 bytes per probability.
  // Both residual branches keep their add but lose a 1-byte mask per element of s b h, forward
  // and backward: 4 bytes per element.
  const double probs = 2.0 * 8 * 2048 * 2048, sbh = 2048.0 * 2 * 1024;
  CHECK(bytes(with) - bytes(without) == Approx(2 * 5 * probs + 4 * sbh));
  CHECK(with.size() - without.size() == 2);
  // The dropout's one operation per probability, forward and backward; the GEMMs are untouched.
  auto elementwise_flops = [](const std::vector<Op>& ops) {
    double sum = 0;
    for (const Op& op : ops) sum += op.kind == OpKind::memory ? op.flops : 0;
    return sum;
  };
  CHECK(elementwise_flops(with) - elementwise_flops(without) == Approx(2 * probs));
  CHECK(total_flops(with, true) == Approx(total_flops(without, true)));
}

TEST_CASE("TorchTitan's selective recompute re-runs k, o and w3 and every element-wise op") {
  ModelSpec m = test::gpt_shape("llama-like", 4, 1024, 8, 2816, 512, 1024);
  m.kv_heads = 2;
  m.activation = Activation::swiglu;
  ShardShape sh;
  sh.micro_batch = 2;
  sh.tp = 1;
  sh.padded_vocab = 1024;
  sh.fused_attention = true;
  const auto none = layer_ops(m, sh, Recompute::none);
  sh.selective = SelectiveRecompute::alternate_matmuls;
  const auto sel = layer_ops(m, sh, Recompute::selective);
  // k: 1024 -> 2 * 128 = 256 wide; o: 1024 -> 1024; w3: 1024 -> 2816, over s b = 1024 tokens.
  const double sb = 512.0 * 2;
  CHECK(total_flops(sel, true) - total_flops(none, true) ==
        Approx(2 * sb * 1024 * (256 + 1024 + 2816)));
  // Every element-wise forward op again (the attention kernel's output is saved).
  double fwd_mem = 0, rec_mem = 0;
  for (const Op& op : none)
    if (op.kind == OpKind::memory && op.phase == Phase::forward) fwd_mem += op.bytes;
  for (const Op& op : sel)
    if (op.kind == OpKind::memory && op.phase == Phase::recompute) rec_mem += op.bytes;
  CHECK(rec_mem == Approx(fwd_mem));
  CHECK(rec_mem > 0);
}
