// Issue 26's acceptance: Llama 3.1 405B at its 128K context on 16,384 H100s (Meta's long-context
// stage, Llama 3 paper Section 3.3.2 and Table 4) cannot fit without context parallelism, by a
// hand derivation of the activation bytes per GPU, and the planner's plans all have cp > 1.
#include <catch2/catch.hpp>

#include <algorithm>

#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/topologies/cluster_size.hpp"

using namespace parallax;

namespace {

PlannerInputs llama_128k() {
  PlannerInputs in;
  in.model = load_model("llama3.1-405b");
  in.cluster = with_nodes(load_cluster("dgx-h100-superpod"), 2048, "test", "--nodes").cluster;
  in.gpus = 16384;
  in.job.global_batch = 1920;  // `parallax plan`'s default
  // Megatron-Core: Megatron-LM's own stack (2021-2022, unfused attention) has no context parallelism.
  in.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), in.job);
  in.job.capabilities = load_stack("megatron-core").capabilities;
  in.profile = load_profile(in.cluster.profile);
  return in;
}

}  // namespace

TEST_CASE("llama3.1-405b at 131072 tokens: by hand, no cp = 1 layout fits an 80 GB H100") {
  const PlannerInputs in = llama_128k();
  const double s = 131072, h = 16384, a = 128, layers = 126, vocab = 128256, b = 1;
  // Without a fused attention kernel (Megatron-LM of 2021-2022), Korthikanti's 5 a s / h term is
  // the s x s softmax output, its dropout mask and dropout output; Llama has no dropout, which
  // leaves the softmax output, 2 bytes per score: per layer, even at tp 8, more than the GPU.
  CHECK(s * b * h * 2 * a * s / h / 8 > 6 * in.cluster.gpu.hbm_bytes);  // 550 GB
  // The most any plan can shrink a GPU's activations without cp: tp 8 (a node's NVLink; TP
  // across nodes is refused) with sequence parallelism, micro-batch 1, and full recompute, which
  // keeps only each layer's input, 2 s b h / t bytes (Korthikanti et al. 2022, Section 4.2).
  const double t = 8;
  const double stash_per_layer = 2 * s * b * h / t;
  // 1F1B: stage 0 holds min(pp, m) micro-batches of its layers/pp layers in flight; with at
  // least pp micro-batches that is every layer's stash once, whatever pp (pp = 1: one micro-batch
  // of all layers).
  const double stash = layers * stash_per_layer;
  // Backward rebuilds one layer's activations: Korthikanti's s b h (34 + 5 a s / h) / t with SP,
  // at its smallest without the s x s term (fused attention): s b h 34 / t.
  const double rebuilt = s * b * h * 34 / t;
  // The loss on the last stage: Megatron's vocab-parallel cross-entropy holds 2 + 4 + 4 bytes per
  // logit (presets/stacks/megatron-lm.json), s b V / t logits.
  const double logits = s * b * vocab / t * 10;
  // With pp = 1 the first and last stage are one GPU: all three at once.
  const double pp1 = stash + rebuilt + logits;
  INFO("cp 1, tp 8, pp 1: " << stash / 1e9 << " + " << rebuilt / 1e9 << " + " << logits / 1e9 << " GB");
  CHECK(pp1 > in.cluster.gpu.hbm_bytes);  // 67.6 + 9.1 + 21.0 = 97.7 GB > 85.9 GB (80 GiB)
  // With pp > 1 the stage 0 GPU holds the stash and the rebuilt layer, and at least 6 bytes per
  // parameter of its share (16-bit weights 2, fp32 gradients 4; ZeRO-2/3 do not run with pp on
  // Megatron): pp divides 126 layers and the 2048 GPUs tp 8 leaves, so pp = 2 and 63 layers of
  // 405B / 126 parameters each, over tp 8.
  const double params_stage0 = 405e9 / 2 / t;
  CHECK(stash + rebuilt + 6 * params_stage0 > in.cluster.gpu.hbm_bytes);
  // Selective recompute (or none) keeps s b h 34 / t per layer: 126 layers' worth on stage 0.
  CHECK(layers * rebuilt > 10 * in.cluster.gpu.hbm_bytes);
  // Context parallelism divides all of it by cp: with cp 16, as Meta ran it, the pp = 1 sum is
  // 6.1 GB.
  CHECK(pp1 / 16 < in.cluster.gpu.hbm_bytes / 10);
}

TEST_CASE("llama3.1-405b at 131072 tokens on 16384 H100s: the planner finds cp > 1 plans only") {
  // parallax plan --model llama3.1-405b --seq-len 131072 --gpus 16384 --cluster dgx-h100-superpod
  //   --nodes 2048 --stack megatron-core
  PlannerInputs in = llama_128k();
  in.top_k = 0;  // the analytic ranking is enough here
  const SearchResult all = search_plans(in);
  REQUIRE_FALSE(all.plans.empty());
  for (const RankedPlan& r : all.plans) {
    CHECK(r.plan.cp > 1);
    CHECK(r.plan.tp * r.plan.cp * r.plan.pp * r.plan.dp == 16384);
  }
  INFO("best: tp " << all.plans[0].plan.tp << " cp " << all.plans[0].plan.cp << " pp "
                   << all.plans[0].plan.pp << " dp " << all.plans[0].plan.dp);
  // Without cp nothing runs: dp must divide the batch of 1920 (dp <= 128), so tp 8 leaves pp >= 16,
  // which 126 layers do not divide evenly.
  in.options.cp_values = {1};
  const SearchResult without = search_plans(in);
  CHECK(without.plans.empty());
  // With lighter first and last stages (--uneven-pp) cp = 1 plans are admitted and predicted, and
  // none fits: at m >= pp a stage keeps every layer's stash, as derived above (the closest comes
  // within a few percent of 80 GiB; this is the check to revisit if the memory model changes).
  in.options.uneven_pp = true;
  const SearchResult uneven = search_plans(in);
  CHECK(uneven.plans.empty());
  CHECK(uneven.evaluated > 0);
}
