// plan --shortlist and plan --measured through the real binary, without MPI: the shortlist
// directory and its launches, a Megatron-LM benchmark log read back with its plan.json, the final
// ranking's arithmetic, and the refusals that leave every file already written untouched.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using namespace parallax::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kJob =
    "plan --model llama3-8b --cluster dgx-h100-superpod --gpus 8 --global-batch 128 --stack megatron-core "
    "--simulate-top 0 --top 1000";

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("parallax_shortlist_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A Megatron-LM benchmark log (training_log's line, --log-interval 1): the first iteration at
// 2 s, the rest at step_ms.
std::string megatron_log(int iters, double step_ms, int global_batch) {
  std::string s = "some launcher output\n";
  for (int i = 1; i <= iters; ++i) {
    s += "[2026-12-07 10:00:00.000000] iteration " + std::to_string(i) + "/" + std::to_string(iters) +
         " | consumed samples: " + std::to_string(i * global_batch) + " | elapsed time per iteration (ms): " +
         std::to_string(i == 1 ? 2000.0 : step_ms) + " | learning rate: 3.0E-04 | global batch size: " +
         std::to_string(global_batch) + " | lm loss: 1.0E+01 |\n";
  }
  return s;
}

}  // namespace

TEST_CASE("plan --shortlist writes each plan's benchmark launches into a new directory, never over one") {
  const std::string dir = fresh_dir("launches") + "/sl";
  const CliResult r = run_cli(kJob + " --shortlist 3 --shortlist-iters 20 --shortlist-dir " + dir + " --json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  const json& sl = j.at("shortlist");
  // The fewest plans whose odds reach 80%, at most 3.
  REQUIRE(!sl.at("plans").empty());
  REQUIRE(sl.at("plans").size() <= 3);
  double total = 0, last = 1;
  for (const json& p : sl.at("plans")) {
    const double odds = p.at("odds_fastest").get<double>();
    CHECK(odds <= last);  // most likely first
    last = odds;
    total += odds;
  }
  CHECK(sl.at("odds_fastest").get<double>() == Approx(total));
  CHECK(total <= 1 + 1e-9);
  if (sl.at("plans").size() < 3) CHECK(total >= 0.8);
  // The first plan's directory: its plan file (the search's plan), the Megatron-LM launch of a
  // benchmark (20 iterations, each logged, mock data) and the executor's.
  const json plan = json::parse(slurp(dir + "/1/plan.json"));
  const size_t rank = sl.at("plans")[0].at("rank").get<size_t>();
  CHECK(plan.at("plan") == j.at("plans")[rank - 1].at("plan"));
  const std::string sbatch = slurp(dir + "/1/megatron.sbatch");
  CHECK_THAT(sbatch, Catch::Contains("--train-iters 20"));
  CHECK_THAT(sbatch, Catch::Contains("--log-interval 1"));
  CHECK_THAT(sbatch, Catch::Contains("--mock-data"));
  CHECK_THAT(slurp(dir + "/1/parallax.sh"), Catch::Contains("--steps 20 --out measurements.json"));
  CHECK(json::parse(slurp(dir + "/shortlist.json")).at("plans").size() == sl.at("plans").size());

  // Again into the same directory: refused in one line, the directory as it was.
  const std::string before = slurp(dir + "/1/plan.json");
  const CliResult again = run_cli(kJob + " --shortlist 2 --shortlist-dir " + dir);
  CHECK(again.code == 2);
  CHECK(count_lines(again.err) == 1);
  CHECK_THAT(again.err, Catch::Contains("--shortlist-dir"));
  CHECK(slurp(dir + "/1/plan.json") == before);
  CHECK(fs::exists(dir + "/" + std::to_string(sl.at("plans").size()) + "/plan.json"));
}

TEST_CASE("plan --measured reads a Megatron-LM log with its plan.json and ranks the measured plan at its time") {
  const std::string base = fresh_dir("measured");
  const std::string dir = base + "/sl";
  const json first = json::parse(run_cli(kJob + " --shortlist 2 --shortlist-dir " + dir + " --json").out);
  const json& entry = first.at("shortlist").at("plans")[1];  // the second most likely
  std::ofstream(dir + "/2/bench.log") << megatron_log(10, 1000.0, 128);
  const CliResult r = run_cli(kJob + " --measured " + dir + "/2/bench.log --out " + base + "/final.json --json");
  REQUIRE(r.code == 0);
  const json f = json::parse(r.out).at("final");
  // The log's median step, its first iteration left out: 1.000 s.
  const double predicted_s = entry.at("ranking_time_s").get<double>();
  CHECK(f.at("shared_scale").get<double>() == Approx(1.0 / predicted_s).epsilon(1e-9));
  const double ratio = json::parse(run_cli(kJob + " --json").out).at("ties").at("ratio").get<double>();
  bool seen = false;
  for (const json& p : f.at("plans")) {
    const double t = p.at("iteration_time_s").get<double>();
    const json& iv = p.at("interval").at("iteration_time_s");
    if (p.at("measured").get<bool>()) {
      seen = true;
      CHECK(p.at("plan") == entry.at("plan"));
      CHECK(t == Approx(1.0));
      CHECK(iv[0].get<double>() == Approx(1.0));  // every step after the first took 1 s
      CHECK(iv[1].get<double>() == Approx(1.0));
    } else {
      // Anchored on the measured plan: the ratio error of two plans' times, both ways.
      CHECK(iv[0].get<double>() == Approx(t / ratio).epsilon(1e-9));
      CHECK(iv[1].get<double>() == Approx(t * ratio).epsilon(1e-9));
    }
  }
  CHECK(seen);
  // The final plan file: the first plan, with what it is expected to take and its interval.
  const json written = json::parse(slurp(base + "/final.json"));
  CHECK(written.at("plan") == f.at("plans")[0].at("plan"));
  CHECK(written.at("expected").at("iteration_time_s") == f.at("plans")[0].at("iteration_time_s"));
  CHECK(written.at("expected").at("interval").at("iteration_time_s") ==
        f.at("plans")[0].at("interval").at("iteration_time_s"));
  // It exports (and runs) as any plan file.
  CHECK(run_cli("export --format megatron --plan " + base + "/final.json").code == 0);
  // A broken expectation is refused by name.
  json bad = written;
  bad["expected"]["interval"]["iteration_time_s"] = {2.0, 3.0};  // not around the time
  std::ofstream(base + "/bad.json") << bad.dump();
  const CliResult refused = run_cli("export --format megatron --plan " + base + "/bad.json");
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("$.expected.interval.iteration_time_s"));
}

TEST_CASE("a TorchTitan job's shortlist has TorchTitan launches, and its log is read back by its tps") {
  const std::string base = fresh_dir("torchtitan");
  const std::string dir = base + "/sl";
  const std::string job =
      "plan --model llama3-8b --cluster dgx-h100-superpod --gpus 8 --global-batch 64 --stack torchtitan "
      "--simulate-top 0 --top 1000";
  const CliResult first = run_cli(job + " --shortlist 1 --shortlist-dir " + dir + " --json");
  REQUIRE(first.code == 0);
  const json entry = json::parse(first.out).at("shortlist").at("plans")[0];
  CHECK(std::find(entry.at("files").begin(), entry.at("files").end(), "torchtitan.sh") != entry.at("files").end());
  CHECK_THAT(slurp(dir + "/1/torchtitan.sh"), Catch::Contains("log_freq = 1"));
  // TorchTitan's tps is tokens per second per GPU (metrics.py): a step of 64 x 8192 tokens on 8
  // GPUs at 7,000 tps took 64 x 8192 / (7000 x 8) = 9.3623 s.
  std::ofstream(dir + "/1/titan.log") << "[titan] step:  1  loss: 12.0  tps: 3,000  tflops: 1.0  mfu: 1%\n"
                                         "[titan] step:  2  loss: 11.0  tps: 7,000  tflops: 1.0  mfu: 1%\n"
                                         "[titan] step:  3  loss: 10.0  tps: 7,000  tflops: 1.0  mfu: 1%\n";
  const CliResult r = run_cli(job + " --measured " + dir + "/1/titan.log --json");
  REQUIRE(r.code == 0);
  const json out = json::parse(r.out);  // a named value: the loop below walks inside it
  bool seen = false;
  for (const json& p : out.at("final").at("plans")) {
    if (!p.at("measured").get<bool>()) continue;
    seen = true;
    CHECK(p.at("iteration_time_s").get<double>() == Approx(64.0 * 8192 / (7000.0 * 8)));
  }
  CHECK(seen);
}

TEST_CASE("plan --measured refuses a bad measurement in one line and leaves the written plan file alone") {
  const std::string base = fresh_dir("refusals");
  const std::string dir = base + "/sl";
  REQUIRE(run_cli(kJob + " --shortlist 1 --shortlist-dir " + dir).code == 0);
  const std::string out = base + "/plan.json";
  std::ofstream(out) << "the user's own file\n";
  fs::create_directories(base + "/lonely");
  std::ofstream(base + "/lonely/bench.log") << megatron_log(5, 900.0, 128);
  std::ofstream(dir + "/1/other-batch.log") << megatron_log(5, 900.0, 64);
  std::ofstream(base + "/broken.json") << "{ \"iterations\": [";
  struct Case {
    std::string file, says;
  };
  for (const Case& c : {Case{base + "/broken.json", "broken.json"}, Case{base + "/missing.json", "missing.json"},
                        Case{base + "/lonely/bench.log", "plan.json"}, Case{dir + "/1/other-batch.log", "global batch"}}) {
    INFO(c.file);
    const CliResult r = run_cli(kJob + " --measured " + c.file + " --out " + out);
    CHECK(r.code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(c.says));
    CHECK(slurp(out) == "the user's own file\n");
  }
  // A log whose directory holds the plan of another job: planned here on 16 GPUs, not 8.
  std::ofstream(dir + "/1/bench.log") << megatron_log(5, 900.0, 128);
  const CliResult other2 = run_cli(
      "plan --model llama3-8b --cluster dgx-h100-superpod --gpus 16 --global-batch 128 --stack megatron-core "
      "--simulate-top 0 --measured " + dir + "/1/bench.log --out " + out);
  CHECK(other2.code == 2);
  CHECK_THAT(other2.err, Catch::Contains("another job"));
  CHECK(slurp(out) == "the user's own file\n");
}
