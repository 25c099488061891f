// Cache residency on CPU profiles: an op's time blends its warm (data in the last-level cache)
// and cold (data from memory) efficiencies by the share of the plan's working set the cache
// holds; the fit reads the warm timings; a refit from a run keeps each entry's warm/cold ratio.
// Expected values are computed here from the efficiencies the test sets.
#include <catch2/catch.hpp>

#include "calibration_test_util.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/measurements.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"

using namespace parallax;

namespace {

// gpt-tiny, tp 1, pp 1, micro-batch 1, fp32 on cpu-local.
struct Setup {
  ModelSpec m = load_model("gpt-tiny");
  ClusterSpec c = load_cluster("cpu-local");
  JobSpec j;
  PlanSpec p;
  Op qkv;
  double working_set = 0;
  Setup() {
    j.dtype = Dtype::fp32;
    j.global_batch = 4;
    j.framework = calib::kExecutorFramework;
    p.micro_batch = 1;
    p.num_micro_batches = 4;
    for (const Op& op : layer_ops(m, shard_shape(m, j, p), Recompute::none))
      if (op.name == "qkv") qkv = op;
    for (const StageMemory& s : stage_memory(m, j, p))
      working_set = std::max(working_set, s.weights_bytes + s.grads_bytes + s.activations_bytes + s.buffers_bytes);
  }
  EfficiencyProfile profile(double cache_bytes) const {
    EfficiencyProfile pf = load_profile("cpu-local");
    pf.gemm_efficiency_by_shape = {{"forward", 1, qkv.shape.m, qkv.shape.n, qkv.shape.k, 0.2, 0.4}};
    pf.op_class_efficiency["norm"] = 0.1;
    pf.op_class_efficiency_warm["norm"] = 0.3;
    pf.cache_bytes_per_rank = cache_bytes;
    return pf;
  }
};

}  // namespace

TEST_CASE("an op's time blends warm and cold efficiency by the cache's share of the working set") {
  const Setup s;
  REQUIRE(s.qkv.flops == Approx(2.0 * 64 * 384 * 128));  // tokens x 3 hidden x hidden
  REQUIRE(s.working_set > 0);
  const double peak = s.c.gpu.peak(Dtype::fp32);
  const double cold = s.qkv.flops / (peak * 0.2), warm = s.qkv.flops / (peak * 0.4);

  // No cache size (a GPU profile): cold, whatever the fraction asked for.
  const EfficiencyProfile none = s.profile(0);
  CHECK(cache_resident_fraction(s.m, s.j, s.p, none) == 0);
  CHECK(op_time_s(s.qkv, s.c.gpu, s.j, none, 0) == Approx(cold));

  // The working set fits: warm.
  const EfficiencyProfile big = s.profile(2 * s.working_set);
  CHECK(cache_resident_fraction(s.m, s.j, s.p, big) == 1);
  CHECK(op_time_s(s.qkv, s.c.gpu, s.j, big, 1) == Approx(warm));

  // A quarter of it fits: a quarter warm.
  const EfficiencyProfile quarter = s.profile(s.working_set / 4);
  const double h = cache_resident_fraction(s.m, s.j, s.p, quarter);
  CHECK(h == Approx(0.25));
  CHECK(op_time_s(s.qkv, s.c.gpu, s.j, quarter, h) == Approx(0.25 * warm + 0.75 * cold));
  CHECK(iteration_costs(s.m, s.c, s.j, s.p, quarter).cache_fraction == Approx(0.25));

  // An op class with both efficiencies blends the same way.
  Op norm;
  for (const Op& op : layer_ops(s.m, shard_shape(s.m, s.j, s.p), Recompute::none))
    if (std::string(op.op_class) == "norm") norm = op;
  REQUIRE(norm.bytes > 0);
  const double roof = norm.bytes / s.c.gpu.hbm_bandwidth_bytes_per_s;
  CHECK(op_time_s(norm, s.c.gpu, s.j, quarter, h) == Approx(0.25 * roof / 0.3 + 0.75 * roof / 0.1));
}

TEST_CASE("the fit turns warm timings into warm efficiencies and the cache share per rank") {
  const ClusterSpec c = load_cluster("cpu-local");
  const double peak = c.gpu.peak(Dtype::fp32);
  calib::RawCalibration raw;
  raw.machine = {{"host", "t"}, {"cores", 2}, {"llc_bytes", 32.0 * (1 << 20)}, {"llc_cpus", 2}};
  calib::ComputeSample cs;
  cs.model = load_model("gpt-tiny");
  const double f = 2.0 * 64 * 384 * 128;
  // forward at 10% of the peak cold, 25% warm; backward (one call) 5% cold, 20% warm.
  cs.gemms.push_back({false, 64, 384, 128, f / (0.10 * peak), 0, 0, f / (0.25 * peak)});
  cs.gemms.push_back({true, 64, 384, 128, 2 * f / (0.05 * peak), 0, 0, 2 * f / (0.20 * peak)});
  cs.class_s["norm"] = 1e-3;
  cs.class_warm_s["norm"] = 0.25e-3;
  raw.compute.push_back(cs);
  const EfficiencyProfile p = calib::fit_profile(raw, c, "t", "test");
  CHECK(p.cache_bytes_per_rank == Approx(16.0 * (1 << 20)));
  const GemmShapeEfficiency* fw = p.gemm_shape("forward", 1, 64, 384, 128);
  const GemmShapeEfficiency* dg = p.gemm_shape("dgrad", 1, 64, 128, 384);
  REQUIRE((fw && dg));
  CHECK(fw->efficiency == Approx(0.10));
  CHECK(fw->warm_efficiency == Approx(0.25));
  CHECK(dg->efficiency == Approx(0.05));
  CHECK(dg->warm_efficiency == Approx(0.20));
  CHECK(p.op_class_efficiency_warm.at("norm") == Approx(4 * p.op_class_efficiency.at("norm")));
}

TEST_CASE("a refit from a run keeps a shape's warm/cold ratio and matches the measured time") {
  // The run: matmul_fc, 8 calls of 128x128x512 (N x C x OC) in 0.01 s on cpu-local.
  const calib::Measurements m =
      calib::measurements_from_json(parallax::test::executor_run_json(1, 1, 0.01), "m.json");
  const double peak = m.plan.cluster.gpu.peak(Dtype::fp32);
  const double in_situ = 8 * 2.0 * 128 * 128 * 512 / peak / 0.01;  // efficiency the run reached
  EfficiencyProfile base = load_profile("cpu-local");
  base.gemm_efficiency_by_shape = {{"forward", 1, 128, 512, 128, 0.2, 0.4}};

  SECTION("the plan's working set fits the cache: the warm efficiency becomes the run's") {
    base.cache_bytes_per_rank = 1e12;
    const EfficiencyProfile out = calib::refit_from_measurements(base, {m});
    const GemmShapeEfficiency* e = out.gemm_shape("forward", 1, 128, 512, 128);
    REQUIRE(e != nullptr);
    CHECK(e->warm_efficiency == Approx(in_situ));
    CHECK(e->efficiency == Approx(in_situ / 2));
  }
  SECTION("no cache modelled: the cold efficiency becomes the run's") {
    base.cache_bytes_per_rank = 0;
    const EfficiencyProfile out = calib::refit_from_measurements(base, {m});
    const GemmShapeEfficiency* e = out.gemm_shape("forward", 1, 128, 512, 128);
    REQUIRE(e != nullptr);
    CHECK(e->efficiency == Approx(in_situ));
    CHECK(e->warm_efficiency == Approx(2 * in_situ));
  }
}
