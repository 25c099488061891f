// Issue 62's loop, end to end on the CPU backend: plan a job for cpu-local whose candidates run at
// different speeds, take the shortlist of 3, run each under mpirun, feed the measurements back
// with plan --measured, and check that the chosen plan is the fastest of all the candidates when
// every one of them is run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "mpi_run.hpp"

using namespace parallax::test;
using nlohmann::json;

namespace {

json run_json(const std::string& cmd, const std::string& out) {
  REQUIRE(shell(cmd + " --json > " + out + " 2>&1") == 0);
  std::ifstream in(out);
  return json::parse(in);
}

// Runs the shortlist directory's plan N with its own launch; its measurements.json beside it.
void launch(const std::string& dir, size_t n) {
  const std::string env = "PARALLAX=" + parallax_bin() + " MPIRUN=" + mpiexec() +
                          " PARALLAX_MPIRUN_FLAGS='--allow-run-as-root --oversubscribe --mca btl self,vader'";
  const std::string log = dir + "/" + std::to_string(n) + "/log.txt";
  INFO(slurp(log));
  REQUIRE(shell(env + " bash " + dir + "/" + std::to_string(n) + "/parallax.sh --quiet > " + log + " 2>&1") == 0);
}

// The median step of a run, its first (warm-up) step left out: computed here, not by parallax.
double median_step_s(const std::string& measurements) {
  std::ifstream in(measurements);
  const json j = json::parse(in);
  std::vector<double> s;
  for (const auto& it : j.at("iterations")) s.push_back(it.at("time_s").get<double>());
  s.erase(s.begin());
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

}  // namespace

TEST_CASE("shortlist loop: plan, shortlist of 3, run them, --measured picks the fastest of all candidates",
          "[slow][release-only][serial]") {
  const std::string dir = scratch_dir("shortlist_loop");
  // gpt-tiny on 2 ranks, global batch 16: tp 1 or 2, micro-batch 1 or 8, with or without full
  // recomputation: 8 candidates, 66-107 ms a step on CI's machine (recomputation is a third more
  // compute; a micro-batch of 1 runs 8 or 16 small GEMMs where 8 runs one or two).
  std::ofstream(dir + "/search.yaml") << "model: gpt-tiny\ncluster: cpu-local\ngpus: 2\nstack: parallax-executor\n"
                                         "dtype: fp32\nglobal_batch: 16\ntp: [1, 2]\npp: 1\nmbs: [1, 8]\n"
                                         "recompute: [none, full]\nzero: 0\nsp: false\n";
  const std::string plan = parallax_bin() + " plan --search " + dir + "/search.yaml --top 100 --shortlist-iters 10";
  const json first = run_json(plan + " --shortlist 3 --shortlist-dir " + dir + "/short", dir + "/short.json");
  const json& plans = first.at("plans");
  REQUIRE(plans.size() == 8);
  const json& shortlist = first.at("shortlist").at("plans");
  REQUIRE(!shortlist.empty());
  REQUIRE(shortlist.size() <= 3);

  std::string measured;
  std::map<std::string, double> step_s;  // plan JSON -> its measured median step
  for (size_t n = 1; n <= shortlist.size(); ++n) {
    launch(dir + "/short", n);
    const std::string m = dir + "/short/" + std::to_string(n) + "/measurements.json";
    measured += " " + m;
    step_s[shortlist[n - 1].at("plan").dump()] = median_step_s(m);
  }
  const json final = run_json(plan + " --measured" + measured + " --out " + dir + "/final.json", dir + "/final_run.json");
  const json& ranked = final.at("final").at("plans");
  REQUIRE(ranked.size() == 8);
  CHECK(ranked[0].at("measured") == true);
  std::ifstream chosen_in(dir + "/final.json");
  const json chosen = json::parse(chosen_in).at("plan");
  CHECK(chosen == ranked[0].at("plan"));

  // Every other candidate, run the same way (its plan file: a shortlisted plan's, the plan
  // replaced): the chosen plan must be the fastest of all.
  std::ifstream job_in(dir + "/short/1/plan.json");
  const json job = json::parse(job_in);
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string key = plans[i].at("plan").dump();
    if (step_s.contains(key)) continue;
    json f = job;
    f["plan"] = plans[i].at("plan");
    const std::string name = dir + "/other" + std::to_string(i);
    std::ofstream(name + ".json") << f.dump(1);
    REQUIRE(mpirun(2, "--plan " + name + ".json --steps 10 --out " + name + "_m.json", name + ".log") == 0);
    step_s[key] = median_step_s(name + "_m.json");
  }
  REQUIRE(step_s.size() == 8);
  const auto fastest = std::min_element(step_s.begin(), step_s.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  INFO("fastest of all " << fastest->first << " at " << fastest->second << " s");
  CHECK(chosen.dump() == fastest->first);
  CHECK(ranked[0].at("iteration_time_s").get<double>() == Approx(fastest->second).epsilon(1e-9));
  // Its interval, from its own steps, is narrower than the corpus's before the measurement.
  const auto width = [](const json& iv) {
    return iv.at("iteration_time_s")[1].get<double>() / iv.at("iteration_time_s")[0].get<double>();
  };
  CHECK(width(ranked[0].at("interval")) < width(plans[0].at("interval")));
}
