// Mixture of experts in the cost model, against hand derivations (docs/moe.md): the expert GEMMs'
// FLOPs follow top_k, not the expert count; the dispatch all-to-all follows the cluster's NVLink
// and NIC figures; the experts' parameters, and their ZeRO shards, divide by ep and edp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "parallax/core/param_counts.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/topologies/topology.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

// A Mixtral-shaped layer (h 4096, 32 heads, 8 KV heads, SwiGLU experts of 14336) with 16 experts,
// top-2, two layers, 4K tokens, micro-batch 1; on DGX H100 nodes (8 GPUs each).
constexpr double kS = 4096, kH = 4096, kKv = 8, kD = 128, kFe = 14336, kE = 16, kTopK = 2;

struct Case {
  ModelSpec m = test::gpt_shape("moe-case", 2, 4096, 32, 14336, 4096, 32000);
  ClusterSpec c = load_cluster("dgx-h100-superpod");
  EfficiencyProfile prof = load_profile("h100-megatron");
  JobSpec j;
  Case() {
    m.kv_heads = 8;
    m.dropout = 0;
    m.activation = Activation::swiglu;
    m.position = Position::rope;
    m.norm = Norm::rmsnorm;
    m.linear_bias = false;
    m.moe.num_experts = 16;
    m.moe.top_k = 2;
    m.moe.expert_ffn_hidden = 14336;
    j.global_batch = 16;
    j.framework = "megatron-core";
    j.attention = Attention::fused;
  }
};

double forward_gemm_flops(const std::vector<Op>& ops, const char* prefix = "") {
  double f = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm && op.phase == Phase::forward && op.name.rfind(prefix, 0) == 0) f += op.flops;
  return f;
}

}  // namespace

TEST_CASE("moe: the experts' GEMMs follow top_k, the imbalance and the tokens, not ep") {
  const Case k;
  const double T = kS;  // tp 1: the rank routes its micro-batch's tokens
  // Each token through top_k SwiGLU experts: gate and up (2 fe wide) and down, 2 flops a MAC.
  const double experts = 2 * T * kTopK * (kH * 2 * kFe + kFe * kH);
  const double router = 2 * T * kE * kH;
  for (int64_t ep : {1, 2, 8, 16}) {
    const PlanSpec p = test::PlanBuilder(1, 1, 16).ep(ep).batches(1, 1);
    const std::vector<Op> ops = layer_ops(k.m, shard_shape(k.m, k.j, p), Recompute::none, true);
    INFO("ep " << ep);
    CHECK(forward_gemm_flops(ops, "moe.fc") == Approx(experts).epsilon(1e-12));
    CHECK(forward_gemm_flops(ops, "moe.router") == Approx(router).epsilon(1e-12));
    // Grouped: num_experts / ep products of T top_k / (num_experts / ep) rows each.
    for (const Op& op : ops)
      if (op.name == "moe.fc1") {
        CHECK(op.shape.batch == Approx(kE / static_cast<double>(ep)));
        CHECK(op.shape.m == Approx(T * kTopK / (kE / static_cast<double>(ep))));
      }
  }
  // The busiest rank of an imbalanced routing computes that much more.
  JobSpec skewed = k.j;
  skewed.moe_imbalance = 1.5;
  const PlanSpec p = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 1);
  CHECK(forward_gemm_flops(layer_ops(k.m, shard_shape(k.m, skewed, p), Recompute::none, true), "moe.fc") ==
        Approx(1.5 * experts).epsilon(1e-12));
}

TEST_CASE("moe: one dispatch all-to-all across two DGX H100 nodes, by hand") {
  const Case k;
  // ep 16 on 16 GPUs: one expert-parallel group, 8 members on each of two nodes.
  const PlanSpec p = test::PlanBuilder(1, 1, 16).ep(16).batches(1, 1);
  const Topology topo(k.c);
  const PlanComm& comm = topo.plan_comm(p);
  REQUIRE(comm.ep_by_stage.size() == 1);
  REQUIRE(comm.ep_by_stage[0].size() == 1);
  const GroupCost& g = comm.ep_by_stage[0][0];
  REQUIRE(g.size == 16);
  REQUIRE(g.nodes == 2);
  REQUIRE(g.per_node == 8);
  // The preset's figures (presets/clusters/dgx-h100-superpod.json): NVLink rings at the 8-GPU
  // all-reduce bus bandwidth, 370 GB/s; each GPU its own NDR NIC at 48 GB/s effective.
  CHECK(g.intra.bandwidth_bytes_per_s == Approx(370e9));
  CHECK(g.inter.bandwidth_bytes_per_s == Approx(48e9));
  // Each token's top_k rows of h bf16 values: 4096 x 2 x 4096 x 2 = 64 MiB per rank. Of it 7/16
  // goes to the 7 peers on the node over NVLink, 8/16 to the 8 on the other node over the NIC:
  // 64 MiB x 8/16 / 48 GB/s = 699.05 us against 64 MiB x 7/16 / 370 GB/s = 79.36 us.
  const double bytes = kS * kTopK * kH * 2;
  CHECK(bytes == 67108864.0);
  const double nic_s = bytes * 8 / 16 / 48e9;
  CHECK(nic_s == Approx(699.05e-6).epsilon(1e-4));
  const double expected = std::max(g.intra.alpha_s + bytes * 7 / 16 / 370e9, g.inter.alpha_s + nic_s);
  CHECK(all_to_all_time_s(g, bytes) == Approx(expected).epsilon(1e-12));
  // The step latency is microseconds: the NIC's bandwidth term is the time.
  CHECK(all_to_all_time_s(g, bytes) == Approx(nic_s).epsilon(0.05));

  // The iteration's costs: each of the 2 MoE layers dispatches and combines once forward and
  // once backward, none overlapped.
  const IterationCosts ic = iteration_costs(k.m, topo, k.j, p, k.prof);
  CHECK(ic.ep_all_to_all_bytes == Approx(bytes));
  CHECK(ic.ep_all_to_all_s == Approx(expected).epsilon(1e-12));
  CHECK(ic.stages[0].ep_forward_s == Approx(2 * 2 * expected).epsilon(1e-12));
  CHECK(ic.stages[0].ep_backward_s == Approx(2 * 2 * expected).epsilon(1e-12));

  // ep 8 keeps each group inside a node: NVLink only, 64 MiB x 7/8 / 370 GB/s.
  const PlanSpec inside = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 1);
  const GroupCost& g8 = topo.plan_comm(inside).ep_by_stage[0][0];
  REQUIRE(g8.nodes == 1);
  CHECK(all_to_all_time_s(g8, bytes) == Approx(g8.intra.alpha_s + bytes * 7 / 8 / 370e9).epsilon(1e-12));
}

// DeepEP and HybridEP (Megatron-Core's flex dispatcher) send a token across the network once per
// node holding any of its experts and over NVLink once per rank holding any (DeepEP
// csrc/kernels/internode.cu, SourceMeta). Derived by hand for the 16-expert top-2 case.
TEST_CASE("moe: a deduplicating dispatch across two DGX H100 nodes, by hand") {
  Case k;
  PlanSpec p = test::PlanBuilder(1, 1, 16).ep(16).batches(1, 1);
  const Topology topo(k.c);
  const GroupCost& g = topo.plan_comm(p).ep_by_stage[0][0];
  REQUIRE(g.nodes == 2);
  REQUIRE(g.per_node == 8);
  // One row per routed token: 4096 x 4096 bf16 = 32 MiB.
  const double row = kS * kH * 2;
  // A node holds 8 of the 16 experts: a token misses the other node when both of its experts are
  // on its own, C(8, 2) / C(16, 2) = 28 / 120. One expert per rank: top-2 distinct experts always
  // hit 2 ranks; 1 in 8 of them is the node's receiving rank itself, the rest go over NVLink.
  const double network = row * (1 - 28.0 / 120.0);
  const double nvlink = row * 2 * 7.0 / 8.0;
  for (MoeDispatcher d : {MoeDispatcher::deepep, MoeDispatcher::hybridep}) {
    p.moe_dispatcher = d;
    const MoeLayerComm c = moe_layer_comm(k.m, shard_shape(k.m, k.j, p));
    const MoeDispatchVolume v = moe_dispatch_volume(c, g.size, g.per_node, g.nodes);
    CHECK(v.network_bytes == Approx(network).epsilon(1e-12));
    CHECK(v.nvlink_bytes == Approx(nvlink).epsilon(1e-12));
    // NIC: 25.7 MB at 48 GB/s = 535.9 us, against NVLink: 58.7 MB at 370 GB/s = 158.7 us.
    const double expected = std::max(g.intra.alpha_s + nvlink / 370e9, g.inter.alpha_s + network / 48e9);
    CHECK(network / 48e9 == Approx(535.9e-6).epsilon(1e-4));
    const IterationCosts ic = iteration_costs(k.m, topo, k.j, p, k.prof);
    CHECK(ic.ep_all_to_all_s == Approx(expected).epsilon(1e-12));
    CHECK(ic.ep_all_to_all_bytes == Approx(network + nvlink).epsilon(1e-12));
    CHECK(ic.stages[0].ep_forward_s == Approx(2 * 2 * expected).epsilon(1e-12));
  }
  // The same plan with the all-to-all dispatcher: 64 MiB x 8/16 over the NIC, 699 us.
  p.moe_dispatcher = MoeDispatcher::alltoall;
  const IterationCosts plain = iteration_costs(k.m, topo, k.j, p, k.prof);
  CHECK(plain.ep_all_to_all_s == Approx(all_to_all_time_s(g, 2 * row)).epsilon(1e-12));
  CHECK(plain.ep_all_to_all_s > 1.3 * (g.inter.alpha_s + network / 48e9));
}

TEST_CASE("moe: the chance a token's experts miss a set of experts, against sampling") {
  // Qwen3-30B-A3B: 128 experts, top-8; 64 on a node (ep 16 over two nodes), 8 on a rank. Drawn
  // 200000 times with a fixed seed: top_k distinct experts uniformly, as force-balanced routing.
  std::mt19937 rng(2026);
  const int trials = 200000;
  int miss_node = 0, miss_rank = 0;
  std::vector<int> experts(128);
  for (int i = 0; i < 128; ++i) experts[static_cast<size_t>(i)] = i;
  for (int t = 0; t < trials; ++t) {
    std::shuffle(experts.begin(), experts.end(), rng);
    const bool node = std::none_of(experts.begin(), experts.begin() + 8, [](int e) { return e < 64; });
    const bool rank = std::none_of(experts.begin(), experts.begin() + 8, [](int e) { return e < 8; });
    miss_node += node ? 1 : 0;
    miss_rank += rank ? 1 : 0;
  }
  CHECK(experts_missed_probability(128, 8, 64) == Approx(miss_node / double(trials)).margin(0.002));
  CHECK(experts_missed_probability(128, 8, 8) == Approx(miss_rank / double(trials)).margin(0.005));
  // Bounds: no expert given misses always; every expert given never misses.
  CHECK(experts_missed_probability(128, 8, 0) == 1.0);
  CHECK(experts_missed_probability(128, 8, 128) == 0.0);
}

TEST_CASE("moe: experts' parameters divide by ep, their optimizer state by edp") {
  const Case k;
  const double expert = 3 * kH * kFe;  // gate, up, down; no biases
  const PlanSpec one = test::PlanBuilder(1, 1, 16).ep(1).batches(1, 1);
  const PlanSpec eight = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 1).zero(1);
  // Without ep a rank holds the whole model: the shape's count, the vocabulary padded to 128.
  const double padding = static_cast<double>(padded_vocab(k.m.vocab, 1) - k.m.vocab) * kH * 2;  // untied
  CHECK(stage_params_per_rank(k.m, one, 0) == Approx(param_counts(k.m).total + padding).epsilon(1e-12));
  // With ep 8 it keeps 16 / 8 of each layer's experts.
  CHECK(stage_params_per_rank(k.m, one, 0) - stage_params_per_rank(k.m, eight, 0) ==
        Approx(2 * (kE - kE / 8) * expert).epsilon(1e-12));
  CHECK(stage_expert_params_per_rank(k.m, eight, 0) == Approx(2 * 2 * expert).epsilon(1e-12));
  // ZeRO-1: the dense parameters' fp32 state over dp 16, the experts' over edp = 16 / 8 = 2.
  const StageMemory sm = stage_memory(k.m, k.j, eight).front();
  const double dense = sm.params - sm.expert_params;
  CHECK(sm.optimizer_bytes == Approx(dense * 12 / 16 + sm.expert_params * 12 / 2).epsilon(1e-12));
  CHECK(sm.weights_bytes == Approx(sm.params * 2).epsilon(1e-12));
}

TEST_CASE("moe: the planner's plans of a mixture of experts spend GPU time on the all-to-all") {
  const Case k;
  const Topology topo(k.c);
  const PlanSpec across = test::PlanBuilder(1, 1, 16).ep(16).batches(1, 1);
  const PlanSpec inside = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 1);
  const Prediction a = predict(k.m, topo, k.j, across, k.prof);
  const Prediction b = predict(k.m, topo, k.j, inside, k.prof);
  CHECK(a.time.ep_comm_s > b.time.ep_comm_s);  // the NIC is 7.7x slower than NVLink here
  CHECK(a.ep_all_to_all_bytes == b.ep_all_to_all_bytes);
  // Model FLOPs count top_k experts per token, the same for both.
  CHECK(a.model_flops == Approx(b.model_flops).epsilon(1e-12));
}

// Megatron-Core's token dispatcher waits for the tokens per expert on the host in every MoE
// layer, so a layer takes the longer of its GPU work and the host's time to issue it
// (EfficiencyProfile::moe_layer_host_s): derived here from that rule alone, with host times far
// above and far below any GPU work of the case's layers.
TEST_CASE("moe: a layer whose GPU work is shorter than the host's waits for the host, by hand") {
  Case k;
  k.j.global_batch = 32;  // dp 16, micro-batch 1: 2 micro-batches per GPU
  const Topology topo(k.c);
  const PlanSpec p = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 2);
  auto run = [&](double host_s, const PlanSpec& plan) {
    EfficiencyProfile prof = k.prof;
    prof.moe_layer_host_s = host_s;
    return predict(k.m, topo, k.j, plan, prof);
  };
  const Prediction none = run(0, p);
  CHECK(none.time.moe_host_s == 0);
  // 1 us is below every layer's GPU work: nothing changes.
  const Prediction below = run(1e-6, p);
  CHECK(below.time.moe_host_s == 0);
  CHECK(below.iteration_time_s == none.iteration_time_s);
  // 1 s and 1.5 s are above it: the wait is the host time less the GPU work, per layer and
  // micro-batch, and adds to the iteration and nothing else: 2 micro-batches x 2 layers x 0.5 s.
  const Prediction h1 = run(1.0, p), h2 = run(1.5, p);
  CHECK(h2.iteration_time_s - h1.iteration_time_s == Approx(2 * 2 * 0.5).epsilon(1e-9));
  CHECK(h1.iteration_time_s - h1.time.moe_host_s == Approx(none.iteration_time_s).epsilon(1e-12));
  // What the wait leaves of 2 x 2 x 1 s is the layers' GPU work: positive, and within the
  // critical stage's compute, TP and expert traffic.
  const double gpu_work = 2 * 2 * 1.0 - h1.time.moe_host_s;
  CHECK(gpu_work > 0);
  CHECK(gpu_work < none.time.compute_s + none.time.tp_comm_s + none.time.ep_comm_s);
  // Full recompute: the host issues each layer's forward twice, so each second of host time
  // costs 1 + the forward's share of the layer's work, which lies between 0 and 1/2 (the
  // backward runs two GEMMs per forward one).
  const PlanSpec full = test::PlanBuilder(1, 1, 16).ep(8).batches(1, 2).recompute(Recompute::full);
  const double slope = (run(1.5, full).iteration_time_s - run(1.0, full).iteration_time_s) / (2 * 2 * 0.5);
  CHECK(slope > 1);
  CHECK(slope < 1.5);
}

TEST_CASE("moe: the host time per MoE layer reads from a profile and refuses a negative one") {
  nlohmann::json j = to_json(load_profile("h100-megatron"));
  auto read = [&] {
    JsonObjectReader r(j, "profile.json");
    return read_profile(r);
  };
  j["moe_layer_host_s"] = 0.0042;
  CHECK(read().moe_layer_host_s == 0.0042);
  CHECK(to_json(read())["moe_layer_host_s"] == 0.0042);
  j["moe_layer_host_s"] = -1;
  CHECK_THROWS_WITH(read(), Catch::Contains("$.moe_layer_host_s"));
}
