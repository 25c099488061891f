// Sensitivity: perturbations move every prediction in the direction the physics says.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/planner/sensitivity.hpp"

using namespace parallax;

TEST_CASE("sensitivity reports seven cases and the worst case is slower than the base") {
  PlannerInputs in;
  in.model = load_model("mt-nlg-530b");
  in.cluster = load_cluster("dgx-a100-superpod");
  in.job.global_batch = 1920;
  in.gpus = 2240;
  in.profile = load_profile(in.cluster.profile);
  const SearchResult base = search_plans(in);
  const SensitivityReport rep = sensitivity_analysis(in, base);
  REQUIRE(rep.cases.size() == 7);
  const double t0 = base.plans.front().time_s;
  CHECK(rep.cases[0].best.time_s > t0);  // compute -20%
  CHECK(rep.cases[1].best.time_s < t0);  // compute +20%
  CHECK(rep.cases[6].best.time_s > rep.cases[0].best.time_s);  // all -20% is worst
  // Compute -20% slows the compute part of the base winner by exactly 1/0.8.
  const PlanSpec& w = base.plans.front().plan;
  EfficiencyProfile slow = in.profile;
  for (auto& [d, e] : slow.gemm_efficiency_by_min_dim) e *= 0.8;
  slow.memory_bound_efficiency *= 0.8;
  const Prediction a = predict(in.model, in.cluster, in.job, w, in.profile);
  const Prediction b = predict(in.model, in.cluster, in.job, w, slow);
  CHECK(b.time.compute_s == Approx(a.time.compute_s / 0.8));
}
