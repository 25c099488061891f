// The simulator and the analytic predict() arrange the same costs; on the plans of the published
// runs (validation/runs/, resolved as `parallax validate` resolves them) their
// iteration times must agree within 2%.
#include <catch2/catch.hpp>
#include <cmath>

#include "parallax/costmodel/predict.hpp"
#include "parallax/simulator/simulate.hpp"
#include "parallax/validation/validation.hpp"

namespace parallax::test {

TEST_CASE("simulator: agrees with predict() within 2% on the published runs",
          "[simulator][analytic]") {
  const std::string dir = std::string(PARALLAX_SOURCE_DIR) + "/validation/runs/";
  const ValidationReport rep = validate_corpus(
      read_corpus({dir + "narayanan2021.json", dir + "mtnlg2022.json", dir + "megatron2019.json"}),
      std::nullopt);
  REQUIRE(rep.rows.size() >= 20);
  double worst = 0;
  for (const ValidationRow& row : rep.rows) {
    const Prediction pr = predict(row.model, row.cluster, row.job, row.plan, row.profile);
    const SimResult sim =
        simulate(make_sim_inputs(row.model, row.cluster, row.job, row.plan, row.profile),
                 SimOptions{false, false});
    const double diff = (sim.iteration_time_s - pr.iteration_time_s) / pr.iteration_time_s;
    INFO(row.id << " schedule " << to_string(row.plan.schedule) << " pp " << row.plan.pp << " vpp "
                << row.plan.vpp << " m " << row.plan.num_micro_batches << ": simulated "
                << sim.iteration_time_s << " s, analytic " << pr.iteration_time_s << " s ("
                << diff * 100 << "%)");
    CHECK(std::fabs(diff) <= 0.02);
    worst = std::max(worst, std::fabs(diff));
  }
  WARN("max |simulated - analytic| / analytic over the published runs: " << worst * 100 << "%");
}

}  // namespace parallax::test
