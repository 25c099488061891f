// Op-class efficiencies per model layer (op_class_efficiency_by_layer): a model the
// microbenchmarks ran uses its own class efficiencies, other models the class's aggregate; the
// fit sums roofline and measured seconds over a model's shards; a refit from a run of that model
// scales its entry and leaves the aggregate alone. Expected values are computed here from the
// efficiencies the tests set and the ops' bytes at the GPU preset's bandwidth.
#include <catch2/catch.hpp>

#include "calibration_test_util.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/measurements.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/profile.hpp"

using namespace parallax;

namespace {

JobSpec fp32_job() {
  JobSpec j;
  j.dtype = Dtype::fp32;
  j.global_batch = 8;
  j.framework = calib::kExecutorFramework;
  return j;
}

// Seconds at the roofline of a model's layer ops of one class (tp, micro-batch): bytes at the
// GPU preset's bandwidth, the attention core's GEMMs at least their FLOPs at the fp32 peak.
double class_roofline(const ModelSpec& m, const GpuSpec& g, int64_t tp, int64_t mb, const std::string& cls) {
  PlanSpec p;
  p.tp = tp;
  p.micro_batch = mb;
  double s = 0;
  for (const Op& op : layer_ops(m, shard_shape(m, fp32_job(), p), Recompute::none)) {
    if (op.op_class != cls) continue;
    const double mem = op.bytes / g.hbm_bandwidth_bytes_per_s;
    s += op.kind == OpKind::gemm ? std::max(mem, op.flops / g.peak(Dtype::fp32)) : mem;
  }
  return s;
}

Op first_op(const ModelSpec& m, const std::string& cls) {
  PlanSpec p;
  for (const Op& op : layer_ops(m, shard_shape(m, fp32_job(), p), Recompute::none))
    if (op.op_class == cls) return op;
  FAIL("no op of class " << cls);
  return {};
}

}  // namespace

TEST_CASE("a model with its own class efficiency uses it, other models the class aggregate") {
  const ClusterSpec c = load_cluster("cpu-local");
  const ModelSpec tiny = load_model("gpt-tiny"), m25 = load_model("gpt-25m");
  EfficiencyProfile pf = load_profile("cpu-local");
  pf.cache_bytes_per_rank = 0;
  pf.op_class_efficiency["attention"] = 0.05;
  pf.op_class_efficiency_by_layer = {{"attention", layer_key(tiny), 0.10, 0}};
  const Op a_tiny = first_op(tiny, "attention"), a_25m = first_op(m25, "attention");
  REQUIRE(a_tiny.bytes > 0);
  const double bw = c.gpu.hbm_bandwidth_bytes_per_s, peak = c.gpu.peak(Dtype::fp32);
  auto roof = [&](const Op& op) {
    return op.kind == OpKind::gemm ? std::max(op.bytes / bw, op.flops / peak) : op.bytes / bw;
  };
  CHECK(op_time_s(a_tiny, c.gpu, fp32_job(), pf, 0, layer_key(tiny)) == Approx(roof(a_tiny) / 0.10));
  CHECK(op_time_s(a_25m, c.gpu, fp32_job(), pf, 0, layer_key(m25)) == Approx(roof(a_25m) / 0.05));
  // No layer given (a caller that does not know the model): the aggregate.
  CHECK(op_time_s(a_tiny, c.gpu, fp32_job(), pf, 0) == Approx(roof(a_tiny) / 0.05));
  // The iteration sums the layer's entry: doubling it halves the attention time of gpt-tiny.
  PlanSpec p;
  p.num_micro_batches = 8;
  const double t1 = iteration_costs(tiny, c, fp32_job(), p, pf).stages[0].forward_s;
  pf.op_class_efficiency_by_layer[0].efficiency = 0.20;
  const double t2 = iteration_costs(tiny, c, fp32_job(), p, pf).stages[0].forward_s;
  const double attention_s = static_cast<double>(tiny.layers) * class_roofline(tiny, c.gpu, 1, 1, "attention");
  CHECK(t1 - t2 == Approx(attention_s / 0.10 - attention_s / 0.20));
}

TEST_CASE("the fit gives each model the roofline over measured seconds of all its shards") {
  const ClusterSpec c = load_cluster("cpu-local");
  const ModelSpec tiny = load_model("gpt-tiny"), m25 = load_model("gpt-25m");
  calib::RawCalibration raw;
  raw.machine = {{"host", "t"}, {"cores", 2}};
  auto sample = [&](const ModelSpec& m, int64_t tp, int64_t mb, double eff, double warm_eff) {
    calib::ComputeSample s;
    s.model = m;
    s.tp = tp;
    s.micro_batch = mb;
    const double r = class_roofline(m, c.gpu, tp, mb, "attention");
    REQUIRE(r > 0);
    s.class_s["attention"] = r / eff;
    s.class_warm_s["attention"] = r / warm_eff;
    raw.compute.push_back(s);
    return r;
  };
  // gpt-tiny: two shards at 0.10 and 0.30 of the roofline; gpt-25m one shard at 0.05.
  const double r1 = sample(tiny, 1, 1, 0.10, 0.20), r2 = sample(tiny, 2, 4, 0.30, 0.60);
  const double r3 = sample(m25, 1, 2, 0.05, 0.05);
  const EfficiencyProfile p = calib::fit_profile(raw, c, "t", "test");
  const ClassLayerEfficiency* t = p.class_layer("attention", layer_key(tiny));
  const ClassLayerEfficiency* b = p.class_layer("attention", layer_key(m25));
  REQUIRE((t && b));
  CHECK(t->efficiency == Approx((r1 + r2) / (r1 / 0.10 + r2 / 0.30)));
  CHECK(t->warm_efficiency == Approx((r1 + r2) / (r1 / 0.20 + r2 / 0.60)));
  CHECK(b->efficiency == Approx(0.05));
  CHECK(p.op_class_efficiency.at("attention") == Approx((r1 + r2 + r3) / (r1 / 0.10 + r2 / 0.30 + r3 / 0.05)));
}

TEST_CASE("profiles write and read per-layer class efficiencies and reject bad ones") {
  EfficiencyProfile pf = load_profile("cpu-local");
  pf.op_class_efficiency["attention"] = 0.05;
  const LayerKey tiny = layer_key(load_model("gpt-tiny"));
  pf.op_class_efficiency_by_layer = {{"attention", tiny, 0.10, 0.25}};
  const nlohmann::json j = to_json(pf);
  JsonObjectReader r(j, "p.json");
  const EfficiencyProfile back = read_profile(r);
  const ClassLayerEfficiency* e = back.class_layer("attention", tiny);
  REQUIRE(e != nullptr);
  CHECK(e->efficiency == Approx(0.10));
  CHECK(e->warm_efficiency == Approx(0.25));

  auto read = [](nlohmann::json x) {
    JsonObjectReader rr(x, "p.json");
    (void)read_profile(rr);
  };
  nlohmann::json orphan = j;
  orphan["op_class_efficiency_by_layer"][0]["class"] = "norm.bwd";
  orphan["op_class_efficiency"].erase("norm.bwd");
  parallax::test::require_input_error([&] { read(orphan); }, "$.op_class_efficiency_by_layer[0].class",
                                      {"norm.bwd", "op_class_efficiency"});
  nlohmann::json twice = j;
  twice["op_class_efficiency_by_layer"].push_back(twice["op_class_efficiency_by_layer"][0]);
  parallax::test::require_input_error([&] { read(twice); }, "$.op_class_efficiency_by_layer[1].class",
                                      {"listed twice"});
  nlohmann::json zero = j;
  zero["op_class_efficiency_by_layer"][0]["efficiency"] = 0;
  parallax::test::require_input_error([&] { read(zero); }, "$.op_class_efficiency_by_layer[0].efficiency", {});
}

TEST_CASE("a refit from a run of a model with its own entry scales that entry for the run's tp only") {
  // The run: gpt-tiny tp1 dp1, each step timing attention_forward at 2 ms in all.
  nlohmann::json run = parallax::test::executor_run_json(1, 1, 0.01);
  run["ranks"][0]["ops"].push_back({{"name", "attention_forward"}, {"stream", "compute"}, {"calls", 16},
                                    {"total_s", 0.004}, {"flops", 1e6}});
  const calib::Measurements m = calib::measurements_from_json(run, "m.json");
  const ModelSpec tiny = m.plan.model;
  EfficiencyProfile base = load_profile("cpu-local");
  base.cache_bytes_per_rank = 0;
  base.op_class_efficiency["attention"] = 0.05;
  base.op_class_efficiency_by_layer = {{"attention", layer_key(tiny), 0.10, 0}};
  const EfficiencyProfile out = calib::refit_from_measurements(base, {m});
  // The run's attention: its ops' roofline per micro-batch x micro-batches x layers, against the
  // measured 2 ms per step.
  const double roof = class_roofline(tiny, m.plan.cluster.gpu, 1, 2, "attention") *
                      static_cast<double>(m.plan.plan.num_micro_batches * tiny.layers);
  REQUIRE(m.plan.plan.tp == 1);
  const ClassLayerEfficiency* e = out.class_layer("attention", layer_key(tiny, 1));
  REQUIRE(e != nullptr);
  CHECK(e->layer.tp == 1);
  CHECK(e->efficiency == Approx(roof / 0.002));
  // Other tp keep the microbenchmarks' entry for every tp; models without one the aggregate.
  const ClassLayerEfficiency* any = out.class_layer("attention", layer_key(tiny, 2));
  REQUIRE(any != nullptr);
  CHECK(any->layer.tp == 0);
  CHECK(any->efficiency == Approx(0.10));
  CHECK(out.op_class_efficiency.at("attention") == Approx(0.05));
  // The tp-keyed entry goes through JSON and back.
  const nlohmann::json j = to_json(out);
  JsonObjectReader r(j, "p.json");
  const EfficiencyProfile back = read_profile(r);
  const ClassLayerEfficiency* b = back.class_layer("attention", layer_key(tiny, 1), true);
  REQUIRE(b != nullptr);
  CHECK(b->efficiency == Approx(roof / 0.002));
  CHECK(back.class_layer("attention", layer_key(tiny, 2), true) == nullptr);
}
