// The GEMM calls `calibrate --backend cuda` times are the CUDA executor's, call for call: against
// calls written down by hand from what the backend runs (forward NT with bf16 output and beta 0;
// dgrad NN, bf16 output, beta 1; wgrad TN, fp32 output, beta 1: issue 25, item 4), and against the
// executor's own plan functions (linear_plan.hpp) run here with a recording GEMM. Host only: no
// GPU, no CUDA toolkit.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "parallax/calibration/layer_gemm_calls.hpp"
#include "parallax/calibration/linear_shapes.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/kernels/cuda/gemm_args.hpp"
#include "parallax/kernels/cuda/linear_plan.hpp"

using namespace parallax;
using kernels::cuda::DType;
using kernels::cuda::GemmCall;
using kernels::cuda::GemmRole;
using kernels::cuda::RowMajorGemm;

namespace {

// One linear layer out (N, OC) = inp (N, C) W^T with W stored (OC, C), all tensors row-major and
// dense: forward out = inp W^T; dgrad dinp (N, C) += dout (N, OC) W (OC, C); wgrad
// dW (OC, C) += dout^T inp, dout read transposed.
std::vector<GemmCall> by_hand(int64_t N, int64_t C, int64_t OC) {
  GemmCall fwd{GemmRole::forward, {}, 1.0f, 0.0f, DType::bf16, DType::bf16, DType::bf16};
  fwd.gemm = {false, true, N, OC, C, /*lda*/ C, /*ldb*/ C, /*ldc*/ OC, 0, 0, 0, 1};
  GemmCall dgrad{GemmRole::dgrad, {}, 1.0f, 1.0f, DType::bf16, DType::bf16, DType::bf16};
  dgrad.gemm = {false, false, N, C, OC, /*lda*/ OC, /*ldb*/ C, /*ldc*/ C, 0, 0, 0, 1};
  GemmCall wgrad{GemmRole::wgrad, {}, 1.0f, 1.0f, DType::bf16, DType::bf16, DType::f32};
  wgrad.gemm = {true, false, OC, C, N, /*lda*/ OC, /*ldb*/ C, /*ldc*/ C, 0, 0, 0, 1};
  return {fwd, dgrad, wgrad};
}

std::string describe(const GemmCall& c) {
  const RowMajorGemm& g = c.gemm;
  auto t = [](DType d) { return d == DType::f32 ? "f32" : "bf16"; };
  return std::string(kernels::cuda::to_string(c.role)) + " " + (g.trans_a ? "T" : "N") +
         (g.trans_b ? "T" : "N") + " M" + std::to_string(g.M) + " N" + std::to_string(g.N) + " K" +
         std::to_string(g.K) + " ld " + std::to_string(g.lda) + "/" + std::to_string(g.ldb) + "/" +
         std::to_string(g.ldc) + " batch " + std::to_string(g.batch) + " " + t(c.a_type) + "x" +
         t(c.b_type) + "->" + t(c.c_type) + " alpha " + std::to_string(c.alpha) + " beta " +
         std::to_string(c.beta);
}

// The calls the sweep times for one layer of `m`, without their layer names.
std::vector<GemmCall> swept(const std::vector<calib::LayerGemmCall>& calls, const std::string& layer) {
  std::vector<GemmCall> out;
  for (const calib::LayerGemmCall& c : calls)
    if (c.layer == layer) out.push_back(c.call);
  return out;
}

void require_same(const std::vector<GemmCall>& got, const std::vector<GemmCall>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("call " << i << ": got " << describe(got[i]) << ", want " << describe(want[i]));
    CHECK(got[i] == want[i]);
  }
}

}  // namespace

TEST_CASE("the CUDA sweep times gpt-tiny's linear layers as the executor runs them, by hand") {
  // gpt-tiny at tp 2, micro-batch 2: N = 2 * 64 = 128 tokens; qkv 128 -> 3 * 128 / 2 = 192,
  // proj 64 -> 128, fc 128 -> 512 / 2 = 256, fc_proj 256 -> 128, head 128 -> 512 / 2 = 256.
  const auto calls = calib::layer_gemm_calls(load_model("gpt-tiny"), 2, 2);
  CHECK(calls.size() == 15);
  struct Layer {
    const char* name;
    int64_t C, OC;
  };
  for (const Layer& l : {Layer{"qkv", 128, 192}, Layer{"proj", 64, 128}, Layer{"fc", 128, 256},
                         Layer{"fc_proj", 256, 128}, Layer{"head", 128, 256}}) {
    INFO(l.name);
    require_same(swept(calls, l.name), by_hand(128, l.C, l.OC));
  }
  CHECK(calls[1].name() == "qkv dgrad");
  CHECK(calls[14].name() == "head wgrad");
}

TEST_CASE("the CUDA sweep's GEMM calls are the executor's plans' calls for each layer") {
  // Another model and tp (llama2-7b, SwiGLU, at tp 4), through the plans themselves.
  const ModelSpec m = load_model("llama2-7b");
  const auto calls = calib::layer_gemm_calls(m, 4, 1);
  for (const calib::LinearShape& l : calib::layer_linear_shapes(m, 4, 1)) {
    INFO(l.name);
    std::vector<GemmCall> plan;
    // Role by position: the forward plan's one GEMM, then dgrad and wgrad in the backward plan.
    auto record = [&](const RowMajorGemm& g, float alpha, const void*, DType at, const void*,
                      DType bt, float beta, void*, DType ct) {
      const auto role = plan.empty() ? GemmRole::forward : plan.size() == 1 ? GemmRole::dgrad : GemmRole::wgrad;
      plan.push_back({role, g, alpha, beta, at, bt, ct});
    };
    uint16_t x = 0;  // stands for every bf16 tensor; the plans only pass pointers on
    float f = 0;
    kernels::cuda::matmul_forward_plan(record, [](auto&&...) {}, &x, &x, &x, &x, l.m, l.k, l.n);
    kernels::cuda::matmul_backward_plan(record, [](auto&&...) {}, &x, &f, &f, &x, &x, &x, l.m,
                                        l.k, l.n);
    require_same(swept(calls, l.name), plan);
    require_same(plan, by_hand(l.m, l.k, l.n));
  }
}

TEST_CASE("the CUDA sweep sizes each operand by its layout and dtype, fp32 for wgrad's output") {
  // qkv of gpt-tiny at tp 2, mb 2: N 128, C 128, OC 192; bf16 is 2 bytes, fp32 4.
  const auto calls = calib::layer_gemm_calls(load_model("gpt-tiny"), 2, 2);
  const auto fwd = kernels::cuda::gemm_call_bytes(calls[0].call);
  CHECK((fwd.a == 128 * 128 * 2 && fwd.b == 192 * 128 * 2 && fwd.c == 128 * 192 * 2));
  const auto dgrad = kernels::cuda::gemm_call_bytes(calls[1].call);
  CHECK((dgrad.a == 128 * 192 * 2 && dgrad.b == 192 * 128 * 2 && dgrad.c == 128 * 128 * 2));
  const auto wgrad = kernels::cuda::gemm_call_bytes(calls[2].call);
  CHECK((wgrad.a == 128 * 192 * 2 && wgrad.b == 128 * 128 * 2 && wgrad.c == 192 * 128 * 4));
}
