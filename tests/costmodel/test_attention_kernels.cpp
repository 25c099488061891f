// Fused attention kernels as data (presets/attention/): reading them, the stack's choice per GPU
// architecture, the efficiency read off the measurements, and the op time it gives, by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/attention_kernel_io.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/attention_efficiency.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/ops.hpp"
#include "spec_builders.hpp"

using namespace parallax;
using nlohmann::json;

namespace {

AttentionKernel kernel_from(const json& j) {
  JsonObjectReader r(j, "kernel.json");
  return read_attention_kernel(r);
}

json point(const char* arch, int d, int s, double f, double b) {
  return {{"arch", arch}, {"head_dim", d}, {"seq_len", s}, {"forward", f}, {"backward", b}, {"source", "t"}};
}

// Two head sizes on sm90, two lengths each; one point on sm80.
const json kKernel = {{"name", "k"},
                      {"source", "test"},
                      {"points",
                       {point("sm90", 128, 1024, 0.40, 0.30), point("sm90", 128, 4096, 0.60, 0.50),
                        point("sm90", 64, 1024, 0.20, 0.10), point("sm90", 64, 4096, 0.40, 0.30),
                        point("sm80", 128, 2048, 0.70, 0.55)}}};

JobSpec job(const json& j) {
  JsonObjectReader r(j, "job.json");
  return read_job(r);
}

}  // namespace

TEST_CASE("attention kernel: efficiency linear in log2 of the length, then of the head size") {
  const AttentionKernel k = kernel_from(kKernel);
  // 2048 is halfway between 1024 and 4096 in log2: (0.40 + 0.60) / 2.
  CHECK(*attention_kernel_efficiency(k, "sm90", 128, 2048, false) == Approx(0.50));
  CHECK(*attention_kernel_efficiency(k, "sm90", 128, 2048, true) == Approx(0.40));
  // A quarter of the way (log2 1448.15 = 10.5): 0.40 + 0.25 * 0.20.
  CHECK(*attention_kernel_efficiency(k, "sm90", 128, 1024 * std::sqrt(2.0), false) == Approx(0.45));
  // Held at the nearest measured length outside the range.
  CHECK(*attention_kernel_efficiency(k, "sm90", 128, 256, false) == Approx(0.40));
  CHECK(*attention_kernel_efficiency(k, "sm90", 128, 65536, false) == Approx(0.60));
  // Head size 90.5 = sqrt(64 x 128) at 2048: the mean of 0.30 (d 64) and 0.50 (d 128).
  CHECK(*attention_kernel_efficiency(k, "sm90", std::sqrt(64.0 * 128), 2048, false) == Approx(0.40));
  // Head size 192 is beyond the measured 128: held there.
  CHECK(*attention_kernel_efficiency(k, "sm90", 192, 4096, false) == Approx(0.60));
  // Each architecture reads only its own points.
  CHECK(*attention_kernel_efficiency(k, "sm80", 64, 512, false) == Approx(0.70));
  CHECK_FALSE(attention_kernel_efficiency(k, "sm100", 128, 2048, false));
}

TEST_CASE("attention kernel: bad files name the field") {
  json j = kKernel;
  j["points"][0]["arch"] = "hopper";
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("$.points[0].arch") && Catch::Contains("compute capability"));
  j = kKernel;
  j["points"][1]["forward"] = 1.5;
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("$.points[1].forward"));
  j = kKernel;
  j["points"][1]["seq_len"] = 1024;
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("listed twice"));
  j = kKernel;
  j["points"] = json::array();
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("$.points") && Catch::Contains("non-empty"));
  j = kKernel;
  j["points"][0]["tflops"] = 300;
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("tflops"));
  j = kKernel;
  j["points"][2].erase("source");
  CHECK_THROWS_WITH(kernel_from(j), Catch::Contains("$.points[2].source"));
}

TEST_CASE("attention kernel: the stack picks one per architecture, the job may name its own") {
  // Megatron-Core through Transformer Engine: flash-attn on A100, cuDNN's fused attention on
  // Hopper and newer (TE's backend selection).
  const JobSpec mc = job({{"global_batch", 8}, {"framework", "megatron-core"}});
  REQUIRE(attention_kernel_for(mc.attention_kernels, "sm80"));
  CHECK(attention_kernel_for(mc.attention_kernels, "sm80")->name == "flash-attention-2");
  REQUIRE(attention_kernel_for(mc.attention_kernels, "sm90"));
  CHECK(attention_kernel_for(mc.attention_kernels, "sm90")->name == "cudnn");
  CHECK_FALSE(attention_kernel_for(mc.attention_kernels, ""));
  // The job's kernel applies on every architecture it was measured on.
  const JobSpec own =
      job({{"global_batch", 8}, {"framework", "megatron-core"}, {"attention_kernel", "flash-attention-2"}});
  CHECK(attention_kernel_for(own.attention_kernels, "sm90")->name == "flash-attention-2");
  CHECK(to_json(own)["attention_kernel"] == "flash-attention-2");
  CHECK_FALSE(to_json(mc).contains("attention_kernel"));
  CHECK_THROWS_WITH(job({{"global_batch", 8}, {"attention_kernel", "nope"}}),
                    Catch::Contains("unknown attention preset"));
  // Unfused stacks name none.
  CHECK(job({{"global_batch", 8}, {"framework", "megatron-lm"}}).attention_kernels.empty());
  // A stack's map must be keyed by compute capability.
  json st = {{"name", "s"}, {"source", "x"}, {"attention", "fused"}, {"attention_kernels", {{"hopper", "cudnn"}}}};
  JsonObjectReader r(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(r), Catch::Contains("attention_kernels.hopper"));
}

TEST_CASE("attention kernel: every preset reads, and every kernel a stack names exists") {
  for (const std::string& n : preset_names("attention")) {
    INFO(n);
    CHECK_FALSE(load_attention_kernel(n).source.empty());
  }
  for (const std::string& n : preset_names("stacks")) {
    INFO(n);
    for (const auto& [arch, kernel] : load_stack(n).attention_kernels) CHECK_NOTHROW(load_attention_kernel(kernel));
  }
}

TEST_CASE("attention kernel: a fused attention op runs at the measured point's efficiency") {
  const GpuSpec gpu = load_gpu("h100-sxm");
  EfficiencyProfile prof = load_profile("h100-megatron");
  prof.frameworks[std::string("megatron-core")].compute_efficiency_scale = 1;
  const JobSpec j = job({{"global_batch", 8}, {"framework", "megatron-core"}});
  const AttentionKernel* k = attention_kernel_for(j.attention_kernels, "sm90");
  REQUIRE(k);
  REQUIRE_FALSE(k->points.empty());
  // A model whose head size and length sit exactly on the kernel's first measured point.
  const AttentionKernelPoint& pt = k->points.front();
  const int64_t heads = 16;
  const ModelSpec m = test::gpt_shape("t", 2, pt.head_dim * heads, heads, 4 * pt.head_dim * heads,
                                      pt.seq_len, 32000);
  const PlanSpec p = test::PlanBuilder(1, 1).batches(1, 1);
  JobSpec jf = j;
  const std::vector<Op> v = layer_ops(m, shard_shape(m, jf, p), Recompute::none);
  for (const Op& o : v) {
    if (o.name != "attn.flash" && o.name != "attn.flash.bwd") continue;
    const double eff = o.name == "attn.flash" ? pt.forward : pt.backward;
    const double mem_s = o.bytes / (gpu.hbm_bandwidth_bytes_per_s * prof.memory_bound_efficiency);
    INFO(o.name);
    CHECK(op_time_s(o, gpu, j, prof) ==
          Approx(std::max(o.flops / (gpu.peak(Dtype::bf16) * eff), mem_s)));
  }
}
