// For each published run, the published plan is admitted by the planner's rules and fits, and the
// planner's winner is predicted at least as fast as it (issue 5's acceptance test).
#include <catch2/catch.hpp>

#include "parallax/planner/planner.hpp"
#include "parallax/validation/validation.hpp"

using namespace parallax;

TEST_CASE("published plans are admitted and the winner is at least as fast") {
  const std::string dir = std::string(PARALLAX_SOURCE_DIR) + "/validation/runs/";
  const Corpus c = read_corpus({dir + "narayanan2021.json", dir + "mtnlg2022.json",
                                dir + "megatron2019.json"});
  REQUIRE(c.runs.size() == 21);
  for (const PublishedRun& run : c.runs) {
    INFO(run.id);
    PlannerInputs in;
    in.model = run.model;
    in.cluster = run.cluster;
    in.job = run.job;
    in.gpus = run.gpus;
    in.profile = load_profile(run.cluster.profile);
    const SearchResult res = search_plans(in);
    REQUIRE_FALSE(res.plans.empty());
    // The published plan (1F1B where the schedule was not published) is among the fitting ones.
    bool admitted = false;
    for (const RankedPlan& r : res.plans) admitted = admitted || r.plan == run.plan;
    CHECK(admitted);
    const Prediction published = predict(run.model, run.cluster, run.job, run.plan, in.profile);
    CHECK(res.plans.front().time_s <= published.iteration_time_s);
  }
}
