// Structure of the analytic prediction: the breakdown adds up, the pipeline bubble follows
// (pp-1)/(m*vpp), and placement that pushes TP across nodes costs what the topology says.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/predict.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

struct Setup {
  ModelSpec m = load_model("mt-nlg-530b");
  ClusterSpec c = load_cluster("dgx-a100-superpod");
  EfficiencyProfile prof = load_profile("a100-megatron");
  JobSpec j;
  PlanSpec p = test::mt_nlg_plan();
  Setup() { j.global_batch = 1920; }
};

double sum(const TimeBreakdown& t) {
  return t.compute_s + t.tp_comm_s + t.pp_comm_s + t.bubble_s + t.dp_comm_exposed_s +
         t.optimizer_s;
}

}  // namespace

TEST_CASE("the time breakdown adds up to the iteration time") {
  Setup s;
  const Prediction pr = predict(s.m, s.c, s.j, s.p, s.prof);
  CHECK(sum(pr.time) == Approx(pr.iteration_time_s).epsilon(1e-12));
  CHECK(pr.tokens_per_s == Approx(1920 * 2048 / pr.iteration_time_s));
  CHECK(pr.mfu == Approx(pr.model_flops / (2240 * pr.iteration_time_s * 312e12)));
}

TEST_CASE("the 1F1B bubble is (pp-1)/m of the steady state; interleaving divides it by vpp") {
  Setup s;
  const Prediction a = predict(s.m, s.c, s.j, s.p, s.prof);
  // The bubble is (pp-1)/m of the mean stage's steady state (stages differ by the embedding on
  // the first and the logits on the last; the event simulator agrees with this arrangement).
  double mean_stage_s = 0;
  for (const StageTime& st : a.stage_times) mean_stage_s += st.total_s() / 35;
  CHECK(a.time.bubble_s / (240 * mean_stage_s) == Approx(34.0 / 240).epsilon(1e-9));
  // ... and within 5% of the critical (last, logits) stage's steady state.
  const double steady = a.time.compute_s + a.time.tp_comm_s;
  CHECK(a.time.bubble_s / steady == Approx(34.0 / 240).epsilon(0.05));
  CHECK(a.time.bubble_s / steady < 34.0 / 240);  // the critical stage is heavier than the mean
  s.p.pp = 35;
  s.p.dp = 8;
  s.p.num_micro_batches = 240;
  s.j.global_batch = 1920;
  // 105 layers / 35 stages = 3: vpp 3 needs m % pp == 0, so use m = 280 (global batch 2240).
  s.j.global_batch = 2240;
  s.p.num_micro_batches = 280;
  const Prediction b1 = predict(s.m, s.c, s.j, s.p, s.prof);
  s.p.vpp = 3;
  s.p.schedule = Schedule::interleaved;
  const Prediction b3 = predict(s.m, s.c, s.j, s.p, s.prof);
  CHECK(b3.time.bubble_s == Approx(b1.time.bubble_s / 3).epsilon(1e-9));
  CHECK(b3.time.pp_comm_s > b1.time.pp_comm_s);  // vpp x the p2p traffic
}

TEST_CASE("placing TP across nodes is slower by the hand-calculated difference") {
  Setup s;
  const Prediction inside = predict(s.m, s.c, s.j, s.p, s.prof);
  s.p.order = "dp-tp-pp";  // DP innermost: each TP group spans 8 nodes, one GPU on each
  const Prediction across = predict(s.m, s.c, s.j, s.p, s.prof);
  CHECK(across.iteration_time_s > 1.2 * inside.iteration_time_s);
  // TP all-reduce of one micro-batch's activations (b s h bf16 = 83.9 MB), hand-derived:
  // inside: ring over NVSwitch; across: 8 nodes x 1 GPU (GPU dp_i of nodes 8 pp_i .. 8 pp_i + 7),
  // each on its own rail: every NIC carries one ring of the 280 concurrent TP groups, 24 GB/s.
  // Ring: 2(n-1) = 14 steps; for 83.9 MB the ring beats the double binary tree
  // (2 log2(8) = 6 steps but 2 S instead of 1.75 S on the wire).
  const double S = 2048.0 * 20480 * 2;
  const double t_in = 14 * s.c.intra.latency_s + 1.75 * S / 230e9;
  const double t_out = 14 * s.c.inter.latency_s + 1.75 * S / 24e9;
  // Per micro-batch on the critical last stage: 3 layers x 6 all-reduces (2 forward,
  // 2 recompute, 2 backward) + 1 for the logits' input gradient, and the cross-entropy's small
  // all-reduce of 3 fp32 values per token.
  const double ars_per_micro_batch = 3 * 6 + 1;
  const double S_ce = 3 * 4 * 2048.0;
  const double ce_in = 14 * s.c.intra.latency_s + 1.75 * S_ce / 230e9;
  // 24 KB is latency-bound across nodes: the tree (6 steps, 2 S) beats the ring (14 steps).
  const double ce_ring = 14 * s.c.inter.latency_s + 1.75 * S_ce / 24e9;
  const double ce_out = 6 * s.c.inter.latency_s + 2 * S_ce / 24e9;
  CHECK(ce_out < ce_ring);
  CHECK(14 * s.c.inter.latency_s + 1.75 * S / 24e9 < 6 * s.c.inter.latency_s + 2 * S / 24e9);
  const double m = 240;
  const double expected_tp_delta =
      m * (ars_per_micro_batch * (t_out - t_in) + (ce_out - ce_in));
  CHECK(across.time.tp_comm_s - inside.time.tp_comm_s ==
        Approx(expected_tp_delta).epsilon(1e-6));
}

TEST_CASE("ZeRO-1 shrinks optimizer memory and replaces all-reduce with RS + AG") {
  Setup s;
  const Prediction z0 = predict(s.m, s.c, s.j, s.p, s.prof);
  s.p.zero = 1;
  const Prediction z1 = predict(s.m, s.c, s.j, s.p, s.prof);
  CHECK(z1.memory[10].optimizer_bytes == Approx(z0.memory[10].optimizer_bytes / 8));
  CHECK(z1.peak_bytes < z0.peak_bytes);
}

TEST_CASE("halving the NICs doubles the network bandwidth terms of the DP synchronisation") {
  // tp 8, pp 35, dp 8: each DP group is one GPU on each of 8 nodes, and the tied-embedding pair
  // one GPU on each of 2 nodes. With 8 NICs every GPU has its own; with 4, GPUs 2i and 2i+1 share
  // NIC i and all 8 rings of a node run at once, so each gets 12 instead of 24 GB/s. Ring time
  // = steps * 5 us + bandwidth term: t4 = 2 t8 - steps * 5 us, with 14 steps (8 nodes) for the
  // DP all-reduce and 2 (2 nodes) for the embedding's.
  Setup s;
  const Prediction p8 = predict(s.m, s.c, s.j, s.p, s.prof);
  s.c.inter.nics_per_node = 4;
  const Prediction p4 = predict(s.m, s.c, s.j, s.p, s.prof);
  CHECK(p4.time.dp_comm_exposed_s ==
        Approx(2 * p8.time.dp_comm_exposed_s - (14 + 2) * s.c.inter.latency_s).epsilon(1e-9));
  CHECK(p4.time.tp_comm_s == Approx(p8.time.tp_comm_s).epsilon(1e-12));  // TP stays on NVLink
}
