// `calibrate --backend cuda` fitting, checked on the CPU build with synthetic sweep results:
// GEMM times made from chosen fractions of the A100's bf16 peak (NVIDIA A100 datasheet,
// 312 TFLOP/s dense bf16) come back as those fractions, forward, dgrad and wgrad apart; what the
// sweep does not measure stays as the base profile had it; a measured collective replaces the
// base's fit of the same group. The layer shapes are checked against hand-computed ones.
#include <catch2/catch.hpp>

#include "calibration_test_util.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/linear_shapes.hpp"
#include "parallax/core/presets.hpp"

using namespace parallax;

TEST_CASE("layer GEMM shapes of gpt-tiny at tp 2, micro-batch 2, computed by hand") {
  // gpt-tiny: hidden 128, ffn 512, seq 64, vocab 512, GeLU. N = 2 * 64 = 128 tokens; per TP
  // rank 3*128/2 = 192 qkv outputs, 64 attention inputs to proj, 256 FFN columns, and
  // 512 / 2 = 256 vocab rows (512 is already a multiple of 128 * 2, Megatron-LM's padding).
  const auto s = calib::layer_linear_shapes(load_model("gpt-tiny"), 2, 2);
  REQUIRE(s.size() == 5);
  CHECK((s[0].name == "qkv" && s[0].m == 128 && s[0].n == 192 && s[0].k == 128));
  CHECK((s[1].name == "proj" && s[1].m == 128 && s[1].n == 128 && s[1].k == 64));
  CHECK((s[2].name == "fc" && s[2].m == 128 && s[2].n == 256 && s[2].k == 128));
  CHECK((s[3].name == "fc_proj" && s[3].m == 128 && s[3].n == 128 && s[3].k == 256));
  CHECK((s[4].name == "head" && s[4].m == 128 && s[4].n == 256 && s[4].k == 128));
}

TEST_CASE("layer GEMM shapes of a SwiGLU model double the FFN's first GEMM") {
  // llama2-7b: hidden 4096, ffn 11008, seq 4096; tp 4: gate and up projections 2 * 2752 columns.
  const auto s = calib::layer_linear_shapes(load_model("llama2-7b"), 4, 1);
  CHECK(s[2].n == 2 * 11008 / 4);
  CHECK(s[3].k == 11008 / 4);
  CHECK(s[0].m == 4096);
}

TEST_CASE("layer GEMM shapes of a grouped-query model narrow the QKV GEMM") {
  // llama3-8b: hidden 4096 = 32 heads of 128, 8 key/value heads; tp 4: q 1024 + k 256 + v 256.
  const ModelSpec m = load_model("llama3-8b");
  REQUIRE((m.heads == 32 && m.kv_heads == 8 && m.hidden == 4096));
  const auto s = calib::layer_linear_shapes(m, 4, 1);
  CHECK((s[0].name == "qkv" && s[0].n == 4096 / 4 + 2 * (8 / 4) * 128));
  CHECK(s[1].k == 4096 / 4);
}

namespace {

calib::RawCalibration cuda_sweep(const ModelSpec& m, double fwd_eff, double dgrad_eff,
                                 double wgrad_eff, double peak) {
  calib::RawCalibration raw;
  raw.backend = "cuda";
  raw.machine = {{"host", "test"}, {"device", "NVIDIA A100-SXM4-80GB (sm_80, 79.2 GiB)"}};
  raw.date = "2026-11-24";
  raw.ranks = 8;
  raw.gemm_path = "cuBLAS";
  calib::ComputeSample c;
  c.model = m;
  c.tp = 8;
  c.micro_batch = 1;
  for (const calib::LinearShape& l : calib::layer_linear_shapes(m, 8, 1)) {
    const double f = 2.0 * static_cast<double>(l.m) * static_cast<double>(l.n) * static_cast<double>(l.k);
    const double d = f / (dgrad_eff * peak), w = f / (wgrad_eff * peak);
    c.gemms.push_back({false, double(l.m), double(l.n), double(l.k), f / (fwd_eff * peak), 0, 0});
    c.gemms.push_back({true, double(l.m), double(l.n), double(l.k), d + w, d, w});
  }
  raw.compute.push_back(c);
  // All-reduce on 8 ranks: alpha 20 us, busbw 180 GB/s, time = alpha + 2(n-1)/n * bytes / busbw.
  for (double b = 4096; b <= 64.0 * 1024 * 1024; b *= 4)
    raw.comm.push_back({Collective::all_reduce, 8, b, 20e-6 + 1.75 * b / 180e9});
  return raw;
}

}  // namespace

TEST_CASE("a CUDA sweep's GEMMs become bf16 efficiencies and op classes stay from the base profile") {
  const ClusterSpec cluster = load_cluster("dgx-a100-superpod");
  const EfficiencyProfile base = load_profile("a100-megatron");
  const double peak = 312e12;  // A100 bf16 dense (datasheet)
  REQUIRE(cluster.gpu.peak(Dtype::bf16) == Approx(peak));
  const ModelSpec m = load_model("gpt3-175b");
  const EfficiencyProfile p =
      calib::fit_profile(cuda_sweep(m, 0.70, 0.60, 0.50, peak), cluster, "sweep", "test sweep", &base);
  REQUIRE(p.gemm_efficiency_by_shape.size() == 15);  // 5 shapes x forward, dgrad, wgrad
  for (const calib::LinearShape& l : calib::layer_linear_shapes(m, 8, 1)) {
    const double M = double(l.m), N = double(l.n), K = double(l.k);
    const GemmShapeEfficiency* f = p.gemm_shape("forward", 1, M, N, K);
    const GemmShapeEfficiency* d = p.gemm_shape("dgrad", 1, M, K, N);
    const GemmShapeEfficiency* w = p.gemm_shape("wgrad", 1, K, N, M);
    INFO(l.name);
    REQUIRE((f && d && w));
    CHECK(f->efficiency == Approx(0.70));
    CHECK(d->efficiency == Approx(0.60));
    CHECK(w->efficiency == Approx(0.50));
  }
  CHECK(p.op_class_efficiency == base.op_class_efficiency);
  CHECK(p.memory_bound_efficiency == base.memory_bound_efficiency);
  CHECK(p.memory_reserve_bytes == base.memory_reserve_bytes);
  CHECK(p.tp_overlap == base.tp_overlap);
  CHECK(p.provenance.backend == "cuda");
  const CollectiveFit* ar = p.collective_fit(Collective::all_reduce, GroupLayout{8, 1, 8});
  REQUIRE(ar != nullptr);
  CHECK(ar->busbw_bytes_per_s == Approx(180e9).epsilon(0.01));
  CHECK(fitted_time_s(*ar, 8, 64e6) == Approx(20e-6 + 1.75 * 64e6 / 180e9).epsilon(0.02));
  // The base's other fits are kept; the swept one is replaced, not duplicated.
  size_t same = 0;
  for (const CollectiveFit& f : p.communication)
    same += f.collective == Collective::all_reduce && !f.inter_node && f.ranks == 8;
  CHECK(same == 1);
  for (const CollectiveFit& b : base.communication)
    if (!(b.collective == Collective::all_reduce && !b.inter_node && b.ranks == 8))
      CHECK(p.collective_fit(b.collective, GroupLayout{b.ranks, b.inter_node ? 2 : 1,
                                                       b.inter_node ? (b.ranks + 1) / 2 : b.ranks}) != nullptr);
}

TEST_CASE("a sweep without op-class measurements needs a base profile") {
  const ClusterSpec cluster = load_cluster("dgx-a100-superpod");
  const auto raw = cuda_sweep(load_model("gpt3-175b"), 0.7, 0.6, 0.5, 312e12);
  parallax::test::require_input_error(
      [&] { calib::fit_profile(raw, cluster, "sweep", "test sweep"); }, "compute",
      {"no op-class measurements", "base profile"});
}

TEST_CASE("a GEMM faster than the preset's bf16 peak is refused") {
  const ClusterSpec cluster = load_cluster("dgx-a100-superpod");
  const EfficiencyProfile base = load_profile("a100-megatron");
  const auto raw = cuda_sweep(load_model("gpt3-175b"), 1.2, 0.6, 0.5, 312e12);
  parallax::test::require_input_error(
      [&] { calib::fit_profile(raw, cluster, "sweep", "test sweep", &base); },
      "gemm forward 2048x4608x12288", {"above the GPU preset's bf16 peak", "374.4 TFLOP/s"});
}
