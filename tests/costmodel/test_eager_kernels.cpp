// Element-wise work in PyTorch eager (TorchTitan's Llama modules) against fused kernels, derived
// by hand from the op sequence of each module: every op one kernel, each reading its inputs and
// writing its output in HBM.
#include <catch2/catch.hpp>

#include <string>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/predict.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

ModelSpec llama_shape() {
  ModelSpec m = test::gpt_shape("l", 2, 1024, 16, 2816, 512, 32000);
  m.kv_heads = 4;
  m.activation = Activation::swiglu;
  m.position = Position::rope;
  m.norm = Norm::rmsnorm;
  m.tied_embeddings = false;
  return m;
}

double bytes_of(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& o : ops)
    if (o.name == name) return o.bytes;
  FAIL("no op " << name);
  return 0;
}

std::vector<Op> ops(const ModelSpec& m, Kernels k) {
  JobSpec j;
  j.kernels = k;
  const PlanSpec p = test::PlanBuilder(1, 1).batches(2, 1);
  return layer_ops(m, shard_shape(m, j, p), Recompute::none);
}

}  // namespace

TEST_CASE("eager RMSNorm, RoPE and SwiGLU move what their PyTorch op sequences move") {
  const ModelSpec m = llama_shape();
  const std::vector<Op> eager = ops(m, Kernels::eager), fused = ops(m, Kernels::fused);
  const double e = 2;                     // bf16 activations
  const double n = 2 * 512 * 1024;        // b s h elements a norm touches
  const double qk = 2 * 512 * (16 + 4) * 64;  // q and k elements (16 heads, 4 KV heads, d 64)
  const double ff = 2 * 512 * 2816;       // the FFN's hidden activations
  // RMSNorm: float() e->4, pow 4->4, mean reads 4, mul by rsqrt 4->4, type_as 4->e, * weight e->e.
  CHECK(bytes_of(eager, "ln1") == Approx(n * ((e + 4) + (4 + 4) + 4 + (4 + 4) + (4 + e) + (e + e))));
  CHECK(bytes_of(fused, "ln1") == Approx(n * (e + e)));
  // Its backward, autograd through the same ops.
  CHECK(bytes_of(eager, "ln1.bwd") ==
        Approx(n * (4 * e + (e + 4) + (4 + 4) + (4 + 4) + (4 + 4 + 4) + (4 + 4 + 4) + (4 + e))));
  // RoPE on q and k: float() e->4, complex product 4->4, type_as 4->e.
  CHECK(bytes_of(eager, "rope") == Approx(qk * ((e + 4) + (4 + 4) + (4 + e))));
  CHECK(bytes_of(fused, "rope") == Approx(qk * (e + e)));
  // silu(a) * b: silu e->e, mul 2e->e; backward: two muls 2e->e each, silu's 2e->e.
  CHECK(bytes_of(eager, "swiglu") == Approx(ff * ((e + e) + (2 * e + e))));
  CHECK(bytes_of(eager, "swiglu.bwd") == Approx(ff * (2 * (2 * e + e) + (2 * e + e))));
  // GEMMs are the same kernels either way.
  CHECK(bytes_of(eager, "fc1") == Approx(bytes_of(fused, "fc1")));
}

TEST_CASE("a LayerNorm model loses nothing in eager: nn.LayerNorm is one kernel each way") {
  ModelSpec m = llama_shape();
  m.norm = Norm::layernorm;
  CHECK(bytes_of(ops(m, Kernels::eager), "ln2") == Approx(bytes_of(ops(m, Kernels::fused), "ln2")));
}

TEST_CASE("stacks say how they run element-wise work; eager TorchTitan is slower than compiled") {
  CHECK(load_stack("torchtitan").kernels == Kernels::eager);
  CHECK(load_stack("megatron-core").kernels == Kernels::fused);
  CHECK(load_stack("llm-foundry").kernels == Kernels::fused);
  // Llama 2 7B on one DGX H100 node with FSDP: the same plan, eager vs torch.compile'd.
  const ModelSpec m = load_model("llama2-7b");
  const ClusterSpec c = load_cluster("dgx-h100-superpod");
  const EfficiencyProfile prof = load_profile("h100-megatron");
  JobSpec j;
  j.global_batch = 16;
  j.framework = "torchtitan";
  j.attention = Attention::fused;
  j.overlap = load_stack("torchtitan").overlap;
  const PlanSpec p = test::PlanBuilder(1, 1, 8).batches(2, 1).zero(3);
  j.kernels = Kernels::eager;
  const double eager_s = predict(m, c, j, p, prof).iteration_time_s;
  j.kernels = Kernels::fused;
  const double fused_s = predict(m, c, j, p, prof).iteration_time_s;
  CHECK(eager_s > fused_s);
}
