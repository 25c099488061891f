// Fused (FlashAttention-style) attention in the cost model, derived by hand: its FLOPs, bytes,
// stored activations, its efficiency and 16-bit peak, and the stacks that run it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "op_lookup.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

// b 2, s 1024, h 1024, a 16 (d 64), t 2: 8 heads per rank.
const ModelSpec kAttentionModel = test::gpt_shape("t", 2, 1024, 16, 4096, 1024, 51200);

std::vector<Op> ops(Attention a, Recompute r) {
  JobSpec j;
  j.attention = a;
  const PlanSpec p = test::PlanBuilder(2, 1).batches(2, 1).recompute(r);
  return layer_ops(kAttentionModel, shard_shape(kAttentionModel, j, p), r);
}

size_t count_phase(const std::vector<Op>& v, Phase ph) {
  return static_cast<size_t>(std::count_if(v.begin(), v.end(), [&](const Op& o) { return o.phase == ph; }));
}

}  // namespace

TEST_CASE("fused attention: causal QK^T and PV FLOPs, the backward 2.5x, no s x s traffic") {
  const std::vector<Op> v = ops(Attention::fused, Recompute::none);
  const double b = 2, s = 1024, a = 8, d = 64, e = 2;
  const Op* f = test::find_op(v, "attn.flash");
  const Op* g = test::find_op(v, "attn.flash.bwd");
  REQUIRE(f);
  REQUIRE(g);
  // Two products of 2 b a s^2 d FLOPs each, half of them under the causal mask.
  CHECK(f->flops == Approx(0.5 * 2 * (2 * b * a * s * s * d)));
  // Backward: QK^T again, then dV, dP, dQ, dK: five products.
  CHECK(g->flops == Approx(0.5 * 5 * (2 * b * a * s * s * d)));
  // Q, K, V read and O written (16-bit), plus the fp32 log-sum-exp per row and head.
  CHECK(f->bytes == Approx(4 * b * s * a * d * e + 4 * b * a * s));
  CHECK(std::string(f->op_class) == "flash_attention");
  CHECK(std::string(g->op_class) == "flash_attention.bwd");
  CHECK_FALSE(test::find_op(v, "attn.softmax"));
  CHECK_FALSE(test::find_op(v, "attn.scores"));
  // The unfused path keeps its s x s softmax.
  CHECK(test::find_op(ops(Attention::unfused, Recompute::none), "attn.softmax"));
}

TEST_CASE("fused attention with unpad / pad: the packed copies of q, k, v and the output, by hand") {
  // llm-foundry's flash_attn_fn: unpad_input gathers q, k, v (each read and written), pad_input
  // scatters the output into zeros (zeros, packed output read, rows written); backward gathers
  // the output gradient and scatters q, k, v's gradients into zeros.
  JobSpec j;
  j.attention = Attention::fused;
  j.attention_unpad = true;
  const PlanSpec p = test::PlanBuilder(2, 1).batches(2, 1);
  const std::vector<Op> v =
      layer_ops(kAttentionModel, shard_shape(kAttentionModel, j, p), Recompute::none);
  const double b = 2, s = 1024, a = 8, d = 64, e = 2, q = b * s * a * d;  // MHA: k, v as q
  REQUIRE(test::find_op(v, "attn.unpad"));
  CHECK(test::find_op(v, "attn.unpad")->bytes == Approx(2 * 3 * q * e));
  CHECK(test::find_op(v, "attn.pad")->bytes == Approx(3 * q * e));
  CHECK(test::find_op(v, "attn.pad.bwd")->bytes == Approx(2 * q * e));
  CHECK(test::find_op(v, "attn.unpad.bwd")->bytes == Approx(3 * 3 * q * e));
  CHECK(test::find_op(v, "attn.unpad.bwd")->phase == Phase::backward_data);
  // Off by default, and meaningless without fused attention.
  CHECK_FALSE(test::find_op(ops(Attention::fused, Recompute::none), "attn.unpad"));
  j.attention = Attention::unfused;
  CHECK_FALSE(test::find_op(layer_ops(kAttentionModel, shard_shape(kAttentionModel, j, p), Recompute::none), "attn.unpad"));
}

TEST_CASE("fused attention: selective recompute has nothing to re-run, full re-runs the kernel") {
  CHECK(count_phase(ops(Attention::fused, Recompute::selective), Phase::recompute) == 0);
  CHECK(count_phase(ops(Attention::unfused, Recompute::selective), Phase::recompute) == 4);
  const std::vector<Op> full = ops(Attention::fused, Recompute::full);
  bool rerun = false;
  for (const Op& o : full) rerun = rerun || (o.name == "attn.flash" && o.phase == Phase::recompute);
  CHECK(rerun);
}

TEST_CASE("fused attention: the 5as/h of Korthikanti's activations becomes the log-sum-exp") {
  const ModelSpec& m = kAttentionModel;
  const double s = 1024, b = 1, h = 1024, a = 16, t = 8, sbh = s * b * h;
  CHECK(layer_activation_bytes(m, 1, 8, false, Recompute::none, Attention::fused) ==
        Approx(sbh * (10 + 24 / t + 4 * a / (h * t))));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::none, Attention::fused) ==
        Approx(sbh / t * (34 + 4 * a / h)));
  CHECK(layer_activation_bytes(m, 1, 8, true, Recompute::selective, Attention::fused) ==
        Approx(layer_activation_bytes(m, 1, 8, true, Recompute::selective, Attention::unfused)));
}

TEST_CASE("fused attention runs at the profile's efficiency without a kernel, and in 16 bits under fp8") {
  const GpuSpec gpu = load_gpu("h100-sxm");
  EfficiencyProfile prof = load_profile("h100-megatron");
  prof.frameworks[std::string("test-stack")].compute_efficiency_scale = 1;
  // A stack no kernel preset covers: the profile's own pair applies.
  prof.fused_attention_forward = 0.33;
  prof.fused_attention_backward = 0.28;
  JobSpec bf16;
  bf16.framework = std::string("test-stack");
  bf16.attention = Attention::fused;
  JobSpec fp8 = bf16;
  fp8.dtype = Dtype::fp8;
  const std::vector<Op> v = ops(Attention::fused, Recompute::none);
  const Op& f = *test::find_op(v, "attn.flash");
  const Op& g = *test::find_op(v, "attn.flash.bwd");
  REQUIRE(prof.fused_attention_forward > 0);
  CHECK(op_time_s(f, gpu, bf16, prof) ==
        Approx(f.flops / (gpu.peak(Dtype::bf16) * prof.fused_attention_forward)));
  CHECK(op_time_s(g, gpu, bf16, prof) ==
        Approx(g.flops / (gpu.peak(Dtype::bf16) * prof.fused_attention_backward)));
  // FP8 recipes cast the linear layers' GEMMs; attention keeps the 16-bit peak.
  CHECK(op_time_s(f, gpu, fp8, prof) == Approx(op_time_s(f, gpu, bf16, prof)));
  // A compute-bound linear-layer GEMM (8192^3) does run at the fp8 peak.
  Op gemm;
  gemm.kind = OpKind::gemm;
  gemm.shape = {1, 8192, 8192, 8192};
  gemm.flops = 2.0 * 8192 * 8192 * 8192;
  gemm.bytes = 2.0 * 3 * 8192 * 8192;
  const Op plain = gemm;  // not a linear layer's (the output layer's logits): 16 bits
  gemm.fp8 = true;
  CHECK(op_time_s(gemm, gpu, fp8, prof) ==
        Approx(op_time_s(gemm, gpu, bf16, prof) * gpu.peak(Dtype::bf16) / gpu.peak(Dtype::fp8)));
  CHECK(op_time_s(plain, gpu, fp8, prof) == Approx(op_time_s(plain, gpu, bf16, prof)));
}

TEST_CASE("stacks say how they compute attention; a job may say otherwise") {
  auto job = [](nlohmann::json j) {
    JsonObjectReader r(j, "test");
    return read_job(r);
  };
  CHECK(job({{"global_batch", 8}, {"framework", "megatron-core"}}).attention == Attention::fused);
  CHECK(job({{"global_batch", 8}, {"framework", "torchtitan"}}).attention == Attention::fused);
  CHECK(job({{"global_batch", 8}, {"framework", "megatron-lm"}}).attention == Attention::unfused);
  CHECK(job({{"global_batch", 8}, {"framework", "parallax-executor"}}).attention == Attention::unfused);
  CHECK(job({{"global_batch", 8}, {"framework", "someone-elses"}}).attention == Attention::unfused);
  CHECK(job({{"global_batch", 8}, {"framework", "megatron-lm"}, {"attention", "fused"}}).attention ==
        Attention::fused);
  CHECK_THROWS_AS(job({{"global_batch", 8}, {"attention", "flash"}}), InputError);
  for (const std::string& n : preset_names("stacks")) {
    INFO(n);
    CHECK_FALSE(load_stack(n).source.empty());
  }
}
