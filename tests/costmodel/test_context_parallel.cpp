// Context parallelism in the cost model, against a hand derivation (docs/context-parallel.md):
// every token-proportional op and activation divided by cp, attention's causal work split evenly
// by load balancing, the K/V ring's cp - 1 steps less the attention block each runs under, and
// gradients reduced (and ZeRO sharded) over dp x cp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/topologies/topology.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

// A GQA GPT layer at 8K: h 4096, 32 heads of 128, 8 KV heads, FFN 16384 (GeLU), no dropout;
// micro-batch 1; on one DGX H100 node.
constexpr double kS = 8192, kH = 4096, kA = 32, kKv = 8, kD = 128, kF = 16384, kB = 1;
// The profile's fused attention efficiencies and one send/recv fit (alpha + bytes / busbw) on a
// node: set here so that the ring's times follow from these numbers alone.
constexpr double kFlashFwd = 0.5, kFlashBwd = 0.4, kAlpha = 10e-6;

struct Case {
  ModelSpec m = test::gpt_shape("cp-case", 2, 4096, 32, 16384, 8192, 32000);
  ClusterSpec c = load_cluster("dgx-h100-superpod");
  EfficiencyProfile prof = load_profile("h100-megatron");
  JobSpec j;
  explicit Case(double busbw) {
    m.kv_heads = 8;
    m.dropout = 0;
    j.global_batch = 8;
    j.framework = "megatron-core";
    j.attention = Attention::fused;  // no kernel named: the profile's pair below applies
    prof.fused_attention_forward = kFlashFwd;
    prof.fused_attention_backward = kFlashBwd;
    prof.communication.push_back({Collective::send_recv, false, 2, kAlpha, busbw, "test"});
  }
};

double forward_gemm_flops(const std::vector<Op>& ops) {
  double f = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm && op.phase == Phase::forward) f += op.flops;
  return f;
}

// The fused attention kernel's time in one pass of one layer on one rank: its FLOPs at the
// profile's efficiency of the H100's bf16 peak (compute-bound at this length: checked below).
double flash_s(double flops, double eff) { return flops / (load_gpu("h100-sxm").peak(Dtype::bf16) * eff); }

}  // namespace

TEST_CASE("cp: each rank computes 1/cp of every linear and of the causal attention") {
  const Case k(200e9);
  for (int64_t cp : {1, 2, 4, 8}) {
    const PlanSpec p = test::PlanBuilder(1, 1, 8 / cp).cp(cp).batches(1, 1);
    const double t = kB * kS / static_cast<double>(cp);  // this rank's tokens
    const double linears = 2 * t * kH * (kH + 2 * kKv * kD) + 2 * t * kH * kH + 2 * t * kH * kF + 2 * t * kF * kH;
    // Causal attention: QK^T and PV, 2 b a s^2 d each over the whole square, half of it at or
    // below the diagonal, split evenly over the cp ranks by the 2cp-chunk load balancing.
    const double attention = 2 * kB * kA * kS * kS * kD / static_cast<double>(cp);
    CHECK(forward_gemm_flops(layer_ops(k.m, shard_shape(k.m, k.j, p), Recompute::none)) ==
          Approx(linears + attention).epsilon(1e-12));
  }
}

TEST_CASE("cp: a layer's activations per rank divide by cp (Korthikanti et al. 2022, fused attention)") {
  const Case k(200e9);
  for (int64_t cp : {1, 2, 4}) {
    const PlanSpec p = test::PlanBuilder(1, 1, 8 / cp).cp(cp).batches(1, 1);
    // Korthikanti's s b h (34 + 5 a s / h) without dropout masks (34 -> 32, of which the MLP's
    // 4f = 16h and K, V 2h each: here K and V are 2 kv d each and the MLP 4f), the s x s term
    // replaced by the fused kernel's fp32 log-sum-exp, 4 a / h; s the rank's s / cp tokens.
    const double per_token = 8 + (4 * kH + 4 * kKv * kD + 4 * kF) / kH + 4 * kA / kH;
    CHECK(layer_activation_bytes(k.m, k.j, p, Recompute::none) ==
          Approx(kS / static_cast<double>(cp) * kB * kH * per_token).epsilon(1e-12));
    // Selective recompute keeps the same with a fused kernel; full keeps the layer input, 2 s b h.
    CHECK(layer_activation_bytes(k.m, k.j, p, Recompute::full) ==
          Approx(2 * kS / static_cast<double>(cp) * kB * kH).epsilon(1e-12));
  }
}

TEST_CASE("cp: the K/V ring costs cp - 1 sends per pass, less the attention block under each") {
  const int64_t cp = 4;
  const PlanSpec p = test::PlanBuilder(1, 1, 2).cp(cp).batches(1, 4);  // 8 GPUs, one node
  const double kv_bytes = 2 * kB * kS / cp * kKv * kD * 2;               // K and V, bf16
  const double attn_f = flash_s(2 * kB * kA * kS * kS * kD / cp, kFlashFwd);
  const double attn_b = flash_s(2.5 * 2 * kB * kA * kS * kS * kD / cp, kFlashBwd);
  // Compute-bound: the kernel's bytes (Q, K, V, O, the log-sum-exp) take far less at HBM speed.
  const double hbm_s = (2 * kB * kS / cp * kA * kD + 2 * kB * kS * kKv * kD) * 2 / 3.35e12;
  REQUIRE(hbm_s < attn_f / 10);
  for (const double busbw : {200e9, 5e9}) {
    const Case k(busbw);
    const IterationCosts ic = iteration_costs(k.m, k.c, k.j, p, k.prof);
    const double step_f = kAlpha + kv_bytes / busbw, step_b = kAlpha + 2 * kv_bytes / busbw;
    const double layers = 2, steps = cp - 1;
    const double exposed_f = layers * steps * std::max(0.0, step_f - attn_f / cp);
    const double exposed_b = layers * steps * std::max(0.0, step_b - attn_b / cp);
    INFO("busbw " << busbw << ": step " << step_f << " s under a block of " << attn_f / cp << " s");
    CHECK(ic.stages[0].cp_forward_s == Approx(exposed_f).margin(1e-12));
    CHECK(ic.stages[0].cp_backward_s == Approx(exposed_b).margin(1e-12));
    if (busbw < 10e9) CHECK(ic.stages[0].cp_forward_s > 0);  // the slow link shows
  }
}

TEST_CASE("cp: gradients reduce, and ZeRO shards, over dp x cp ranks") {
  const Case k(200e9);
  const PlanSpec p = test::PlanBuilder(2, 1, 2).cp(2).batches(1, 4).zero(1);  // 8 GPUs
  const Topology topo(k.c);
  const PlanComm& comm = topo.plan_comm(p);
  REQUIRE(comm.dp_by_stage[0].size() == 1);
  CHECK(comm.dp_by_stage[0][0].size == 4);  // dp 2 x cp 2
  const StageMemory sm = stage_memory(k.m, k.j, p).front();
  CHECK(sm.optimizer_bytes == Approx(sm.params * 12 / 4));  // fp32 master, m, v over dp x cp
  CHECK(sm.weights_bytes == Approx(sm.params * 2));         // ZeRO-1 keeps whole 16-bit weights
}
