// What the stacks overlap (presets/stacks/, "overlap"), derived by hand: an overlapped collective
// costs max(the part with nothing under it, its time - the compute under it) plus the SMs it takes
// from that compute; ZeRO-3 / FSDP gathers and reduce-scatters every layer of every micro-batch.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/predict.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

StackOverlap nothing_overlapped() { return {}; }

// MT-NLG 530B on the DGX A100 SuperPOD, global batch 1920, with the stack's overlaps.
struct MtNlg {
  ModelSpec m = load_model("mt-nlg-530b");
  ClusterSpec c = load_cluster("dgx-a100-superpod");
  EfficiencyProfile prof = load_profile("a100-megatron");
  JobSpec j;
  explicit MtNlg(const std::string& stack) {
    j.global_batch = 1920;
    j.overlap = load_stack(stack).overlap;
  }
  IterationCosts costs(const PlanSpec& p) const { return iteration_costs(m, c, j, p, prof); }
};

StackOverlap only_tp() {
  StackOverlap o;
  o.tp_comm = true;
  o.comm_ctas = 24;
  return o;
}

// 4 layers of h 1024 with the A100 profile's all-gather and reduce-scatter fitted on `ranks` GPUs
// of one node (alpha 20 us, busbw 100 GB/s: nccl-tests' alpha + (n-1)/n bytes / busbw), 64
// sequences per iteration, nothing overlapped.
constexpr double kAlpha = 20e-6, kBusbw = 100e9;
struct ShardedCase {
  ModelSpec m = test::gpt_shape("z3", 4, 1024, 16, 4096, 1024, 51200);
  ClusterSpec c = load_cluster("dgx-a100-superpod");
  EfficiencyProfile prof = load_profile("a100-megatron");
  JobSpec j;
  double ranks;
  explicit ShardedCase(int64_t n) : ranks(static_cast<double>(n)) {
    for (Collective k : {Collective::all_gather, Collective::reduce_scatter})
      prof.communication.push_back({k, false, n, kAlpha, kBusbw, "test"});
    j.global_batch = 64;
    j.overlap = nothing_overlapped();
  }
  double coll(double bytes) const { return kAlpha + (ranks - 1) / ranks * bytes / kBusbw; }
};

}  // namespace

TEST_CASE("an overlapped collective costs what the compute under it cannot hide, plus its SMs") {
  // 3 s of communication under 2 s of compute: 1 s exposed; the 2 s it shares slow the compute
  // by 10%: 0.2 s.
  CHECK(overlapped_time_s(3, 2, 0, 0.1) == Approx(1 + 0.1 * 2));
  // Fully hidden but for its last bucket (0.25 s): the other 0.75 s cost 10% of themselves.
  CHECK(overlapped_time_s(1, 5, 0.25, 0.1) == Approx(0.25 + 0.1 * 0.75));
  // Nothing to run under: all of it exposed, no slowdown.
  CHECK(overlapped_time_s(1, 0, 0, 0.1) == Approx(1));
  CHECK(overlapped_time_s(0, 5, 0, 0.1) == 0);
  // The slowdown is the SMs the collective's thread blocks hold: 24 of an H100's 132.
  StackOverlap o;
  o.comm_ctas = 24;
  CHECK(overlap_slowdown(load_gpu("h100-sxm"), o) == Approx(24.0 / 132));
  CHECK(overlap_slowdown(load_gpu("a100-80gb"), o) == Approx(24.0 / 108));
  GpuSpec no_sms = load_gpu("h100-sxm");
  no_sms.sm_count = 0;
  CHECK(overlap_slowdown(no_sms, o) == 0);
}

TEST_CASE("stacks say what they overlap: Megatron-LM 2021 nothing, Megatron-Core and FSDP more") {
  const StackOverlap mlm = load_stack("megatron-lm").overlap;
  CHECK_FALSE(mlm.grad_reduce);
  CHECK_FALSE(mlm.tp_comm);
  CHECK_FALSE(mlm.p2p);
  const StackOverlap mcore = load_stack("megatron-core").overlap;
  CHECK(mcore.grad_reduce);
  CHECK(mcore.param_gather);
  CHECK(mcore.tp_comm);
  CHECK(mcore.p2p);
  const StackOverlap fsdp = load_stack("pytorch-fsdp").overlap;
  CHECK(fsdp.sharded_prefetch);
  CHECK(fsdp.grad_reduce);
  CHECK_FALSE(fsdp.tp_comm);
  // A job names the stack; the overlaps come with it.
  const nlohmann::json job{{"global_batch", 8}, {"framework", "torchtitan"}};
  JsonObjectReader r(job, "job", "$.job");
  CHECK(read_job(r).overlap == load_stack("torchtitan").overlap);
  CHECK(stack_or_default("a-stack-nobody-wrote").overlap == StackOverlap{});
}

TEST_CASE("ZeRO-3 without prefetch waits for every layer's gather and reduce-scatter, per micro-batch") {
  // 4 layers of h 1024 on one DGX A100 node, dp 8, micro-batch 8. The profile's collective fits
  // fix each gather on the 8 ranks.
  ShardedCase z(8);
  const ModelSpec& m = z.m;
  const ClusterSpec& c = z.c;
  const EfficiencyProfile& prof = z.prof;
  JobSpec& j = z.j;
  const PlanSpec p = test::PlanBuilder(1, 1, 8).batches(8, 1).zero(3);
  const double h = 1024;
  const double layer = 12 * h * h + 13 * h;                 // QKV, proj, FC1, FC2, two LayerNorms
  const double root = 51200 * h + 1024 * h + 2 * h;         // tied embedding, positions, final norm
  auto coll = [&](double bytes) { return z.coll(bytes); };
  const IterationCosts costs = iteration_costs(m, c, j, p, prof);
  const StageTime& st = costs.stages[0];
  // Forward: the root unit and each layer gathered (bf16 weights); backward: every layer but
  // the last one of the forward gathered again, every layer's and the root's fp32 gradients
  // reduce-scattered.
  CHECK(st.dp_forward_s == Approx(coll(2 * root) + 4 * coll(2 * layer)));
  CHECK(st.dp_backward_s == Approx(3 * coll(2 * layer) + 4 * coll(4 * layer) + coll(4 * root)));
  CHECK(costs.dp_s[0] == 0);  // nothing left for after the last backward

  SECTION("with prefetch each gather runs under the previous layer's compute") {
    j.overlap = load_stack("pytorch-fsdp").overlap;
    const IterationCosts pre = iteration_costs(m, c, j, p, prof);
    const double sigma = 24.0 / 108;
    const double ag = coll(2 * layer), rs = coll(4 * layer);
    // A layer's forward (8 x 1024 tokens, 25 GFLOP) outlasts its 25 MB gather: hidden, at the
    // cost of the SMs it holds. The first gather of the pass has nothing under it.
    const double fwd_layer = (pre.stages[0].forward_s) / 4;  // embedding and head are cheap
    REQUIRE(ag < 0.5 * fwd_layer);
    CHECK(pre.stages[0].dp_forward_s == Approx(coll(2 * root) + ag + 3 * sigma * ag).epsilon(1e-9));
    CHECK(pre.stages[0].dp_backward_s ==
          Approx(3 * sigma * (ag + rs) + rs + coll(4 * root)).epsilon(1e-9));
  }
}

TEST_CASE("TorchTitan's FSDP inside a pipeline gathers and reduce-scatters once per iteration") {
  // The shape above on pp 2 x dp 4 (one DGX A100 node). With pp > 1 TorchTitan keeps a stage's
  // parameters gathered and its gradients unsharded until the last micro-batch: no traffic per
  // micro-batch; per iteration the stage's fp32 gradients reduce-scattered and its bf16 weights
  // gathered once, as the distributed optimizer (ZeRO-1) moves them.
  ShardedCase z(4);
  JobSpec& j = z.j;
  j.pipeline = load_stack("torchtitan").pipeline;
  REQUIRE(j.pipeline.sharded_stages);
  const PlanSpec p = test::PlanBuilder(1, 2, 4).batches(8, 2).zero(3);
  const double h = 1024;
  const double layer = 12 * h * h + 13 * h;            // QKV, proj, FC1, FC2, two LayerNorms
  const double stage0 = 2 * layer + 51200 * h + 1024 * h;  // two layers, token and position embeddings
  const IterationCosts costs = iteration_costs(z.m, z.c, j, p, z.prof);
  CHECK(costs.stages[0].dp_forward_s == 0);
  CHECK(costs.stages[0].dp_backward_s == 0);
  CHECK(costs.dp_s[0] == Approx(z.coll(4 * stage0) + z.coll(2 * stage0)));
  // The same plan on a stack whose pipeline would shard per micro-batch pays every layer's
  // gathers in every micro-batch (validate_plan refuses it on DeepSpeed and Megatron-LM).
  j.pipeline.sharded_stages = false;
  CHECK(iteration_costs(z.m, z.c, j, p, z.prof).stages[0].dp_forward_s > 0);
}

TEST_CASE("ZeRO-3 throughput per GPU falls as data parallelism grows at a fixed global batch") {
  // Llama 2 7B on a DGX H100 SuperPOD with TorchTitan's FSDP2, 512 sequences per iteration: more
  // ranks per gather mean more ring steps and the network's bandwidth instead of NVLink's, so
  // the backward's gathers and reduce-scatters outgrow the compute they hide under.
  const ModelSpec m = load_model("llama2-7b");
  const ClusterSpec c = load_cluster("dgx-h100-superpod");
  const EfficiencyProfile prof = load_profile("h100-megatron");
  JobSpec j;
  j.global_batch = 512;
  j.framework = "torchtitan";
  j.overlap = load_stack("torchtitan").overlap;
  double last = 1e300;
  for (int64_t dp : {8, 64, 512}) {
    const PlanSpec p = test::PlanBuilder(1, 1, dp).batches(1, 512 / dp).zero(3);
    const Prediction pr = predict(m, c, j, p, prof);
    const double per_gpu = pr.tokens_per_s / static_cast<double>(dp);
    INFO("dp " << dp << ": " << per_gpu << " tokens/s/GPU, exposed DP " << pr.time.dp_comm_exposed_s);
    CHECK(per_gpu < last);
    last = per_gpu;
  }
}

TEST_CASE("TP communication under the GEMMs beside it costs only its SMs when the GEMMs are longer") {
  // MT-NLG's layers (h 20480) on tp 8 with SP: a layer's GEMMs take ~10 ms per micro-batch,
  // its all-gathers and reduce-scatters well under 1 ms, so all of it hides.
  MtNlg s("megatron-lm");
  const PlanSpec p = test::PlanBuilder(8, 35, 8).batches(1, 240).sequence_parallel().recompute(Recompute::selective);
  const IterationCosts plain = s.costs(p);
  s.j.overlap = only_tp();
  const IterationCosts over = s.costs(p);
  CHECK(over.stages[10].tp_comm_s == Approx(24.0 / 108 * plain.stages[10].tp_comm_s));
  // Without SP there is nothing Transformer Engine's overlap splits: unchanged.
  const PlanSpec no_sp = test::PlanBuilder(8, 35, 8).batches(1, 240);
  s.j.overlap = nothing_overlapped();
  const double before = s.costs(no_sp).stages[10].tp_comm_s;
  s.j.overlap = only_tp();
  CHECK(s.costs(no_sp).stages[10].tp_comm_s == Approx(before));
}

TEST_CASE("the distributed optimizer's reduce-scatter and gather hide but for their last bucket") {
  // MT-NLG with ZeRO-1 and Megatron-Core's overlaps at micro-batch 16: a stage's 15B parameters
  // on tp 8 are 1.9B per rank, 48 buckets of 40M; each collective is hidden under a micro-batch's
  // backward or forward but for one bucket, and slows that compute by 24/108 of the rest.
  MtNlg s("megatron-core");
  const PlanSpec p = test::PlanBuilder(8, 35, 8).batches(16, 15).recompute(Recompute::full).zero(1);
  const IterationCosts costs = s.costs(p);
  const double params = stage_params_per_rank(s.m, p, 10);
  const double buckets = std::ceil(params / kDpBucketParams);
  const double sigma = 24.0 / 108;
  const double dp = costs.dp_s[10];  // reduce-scatter + all-gather
  REQUIRE(dp < costs.stages[10].forward_s);
  CHECK(costs.dp_exposed_s[10] == Approx(dp / buckets + sigma * dp * (1 - 1 / buckets)));
  // Megatron-LM 2021 exposes all of it.
  CHECK(MtNlg("megatron-lm").costs(p).dp_exposed_s[10] == Approx(dp));
}

TEST_CASE("at large data-parallel sizes Megatron-Core's buckets grow to 1M parameters per rank") {
  // dp 64: buckets of max(40M, 64 x 1M) = 64M parameters, so the last one (exposed) is larger.
  MtNlg s("megatron-core");
  const PlanSpec p = test::PlanBuilder(8, 5, 64).batches(16, 2).recompute(Recompute::full).zero(1);
  const IterationCosts costs = s.costs(p);
  const double params = stage_params_per_rank(s.m, p, 2);
  const double buckets = std::ceil(params / 64e6);
  const double sigma = 24.0 / 108;
  const double dp = costs.dp_s[2];
  REQUIRE(dp < costs.stages[2].forward_s);
  CHECK(costs.dp_exposed_s[2] == Approx(dp / buckets + sigma * dp * (1 - 1 / buckets)));
  CHECK(dp_bucket_count(params, 64) == static_cast<int64_t>(buckets));
  CHECK(dp_bucket_count(params, 8) == static_cast<int64_t>(std::ceil(params / 40e6)));
}

TEST_CASE("interleaved p2p runs under the next chunk's compute with Megatron-Core") {
  const MtNlg s("megatron-core");
  // 105 layers: 3 per stage, vpp 3 puts one layer in each chunk; a 10 MB activation slice sent
  // between nodes (tens of microseconds) hides under a layer's forward (tens of milliseconds).
  const PlanSpec inter = test::PlanBuilder(8, 35, 8).batches(1, 240).interleaved(3);
  CHECK(s.costs(inter).p2p_exposed_fraction == 0);
  // 1F1B keeps Megatron-Core's blocking sends.
  const PlanSpec one = test::PlanBuilder(8, 35, 8).batches(1, 240);
  CHECK(s.costs(one).p2p_exposed_fraction == 1);
}

TEST_CASE("NeMo 1 exposes TP communication and interleaved p2p; its optimizer overlaps as NeMo 2's") {
  // NeMo 1's defaults (ub_tp_comm_overlap False, overlap_p2p_comm False): the TP all-gathers and
  // reduce-scatters cost all their time, as with nothing overlapped, where NeMo 2 hides them to
  // their SMs; the distributed optimizer's collectives hide exactly as NeMo 2's.
  const PlanSpec p = test::PlanBuilder(8, 35, 8).batches(1, 240).sequence_parallel().interleaved(3).zero(1);
  MtNlg bare("nemo");
  bare.j.overlap = nothing_overlapped();
  const IterationCosts none = bare.costs(p);
  const IterationCosts one = MtNlg("nemo-1").costs(p);
  const IterationCosts two = MtNlg("nemo").costs(p);
  CHECK(one.stages[10].tp_comm_s == Approx(none.stages[10].tp_comm_s));
  CHECK(two.stages[10].tp_comm_s == Approx(24.0 / 108 * none.stages[10].tp_comm_s));
  CHECK(one.p2p_exposed_fraction == 1);
  CHECK(two.p2p_exposed_fraction == 0);
  CHECK(one.dp_exposed_s[10] == Approx(two.dp_exposed_s[10]));
}

TEST_CASE("ZeRO-3 memory holds two gathered layers, one layer's gradients and the embeddings") {
  // 4 layers of h 1024 on dp 8, bf16 weights and fp32 gradients (18 bytes per parameter): the
  // buffers grow by (2 layers + the root unit) x 2 bytes + a layer x 4 bytes over ZeRO-2's.
  const ModelSpec m = test::gpt_shape("z3", 4, 1024, 16, 4096, 1024, 51200);
  JobSpec j;
  j.global_batch = 64;
  const double h = 1024;
  const double layer = 12 * h * h + 13 * h;
  const double root = 51200 * h + 1024 * h + 2 * h;
  const PlanSpec z2 = test::PlanBuilder(1, 1, 8).batches(8, 1).zero(2);
  const PlanSpec z3 = test::PlanBuilder(1, 1, 8).batches(8, 1).zero(3);
  const StageMemory a = stage_memory(m, j, z2)[0], b = stage_memory(m, j, z3)[0];
  CHECK(b.buffers_bytes - a.buffers_bytes == Approx((2 * layer + root) * 2 + layer * 4));
  CHECK(b.weights_bytes == Approx((4 * layer + root) * 2 / 8));
}

TEST_CASE("DeepSpeed's pipeline engine waits for four transfers per micro-batch, Megatron-LM's two") {
  // MT-NLG (pp 35, 240 micro-batches): each interior stage's receives block as its sends do, so
  // the pipeline's critical path holds two more transfers per micro-batch than Megatron-LM's
  // batched send_forward_recv_backward: 240 x 2 x one transfer.
  MtNlg run("megatron-deepspeed");
  const PlanSpec p = test::mt_nlg_plan();
  run.j.pipeline = load_stack("megatron-deepspeed").pipeline;
  REQUIRE(run.j.pipeline.sequential_p2p);
  const IterationCosts seq = run.costs(p);
  CHECK(seq.p2p_per_micro_batch == 4);
  const Prediction a = predict(run.m, run.c, run.j, p, run.prof);
  run.j.pipeline.sequential_p2p = false;
  const Prediction b = predict(run.m, run.c, run.j, p, run.prof);
  CHECK(a.time.pp_comm_s - b.time.pp_comm_s ==
        Approx(240 * 2 * seq.p2p_exposed_fraction * seq.p2p_s).epsilon(1e-9));
  // With two stages neither has two neighbours: two transfers, as Megatron-LM.
  run.j.pipeline.sequential_p2p = true;
  PlanSpec two = test::PlanBuilder(8, 2, 140).uneven(52, 53).batches(1, 12).recompute(Recompute::full);
  CHECK(run.costs(two).p2p_per_micro_batch == 2);
}
