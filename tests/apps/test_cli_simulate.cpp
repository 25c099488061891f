// Drives `parallax simulate`: JSON figures, the schedule table, the text timeline, the trace
// file, and bad input as a one-line error with exit code 2.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>

#include "cli_runner.hpp"
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using Result = parallax::test::CliResult;

Result run(const std::string& args) { return parallax::test::run_cli(args); }

// GPT-3 175B, tp 8 x pp 4 x dp 1, 8 micro-batches of 1.
const std::string kSmall = "--model gpt3-175b --gpus 32 --tp 8 --pp 4 --global-batch 8";

}  // namespace

TEST_CASE("simulate --json has the iteration time and one entry per rank", "[cli][simulate]") {
  const Result r = run("simulate " + kSmall + " --json");
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("iteration_time_s").get<double>() > 0);
  REQUIRE(j.at("ranks").size() == 4);
  for (const auto& rank : j.at("ranks")) {
    const double busy = rank.at("busy_fraction"), idle = rank.at("idle_fraction");
    CHECK(busy + idle == Approx(1.0));
    CHECK(rank.at("bubble_fraction").get<double>() <= idle + 1e-12);
    CHECK(rank.at("peak_bytes").get<double>() > rank.at("peak_activation_bytes").get<double>());
  }
  // 4 ranks x 8 micro-batches x (F + B); 3 boundaries x 8 micro-batches x 2 directions.
  CHECK(j.at("steps") == 64);
  CHECK(j.at("transfers") == 48);
}

TEST_CASE("simulate --schedule-only prints the 1F1B table", "[cli][simulate]") {
  const Result r =
      run("simulate --model gpt3-175b --gpus 16 --tp 8 --pp 2 --global-batch 2 "
          "--schedule-only");
  REQUIRE(r.code == 0);
  CHECK(r.out == "rank 0: F0 F1 B0 B1\nrank 1: F0 B0 F1 B1\n");
}

TEST_CASE("simulate --timeline draws one row per rank", "[cli][simulate]") {
  const Result r = run("simulate " + kSmall + " --timeline --width 60");
  REQUIRE(r.code == 0);
  for (const char* row : {"rank 0  |", "rank 1  |", "rank 2  |", "rank 3  |"}) {
    const size_t at = r.out.find(row);
    REQUIRE(at != std::string::npos);
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    CHECK(line.size() == 9 + 60 + 1);
    CHECK(line.find('F') != std::string::npos);
    CHECK(line.find('B') != std::string::npos);
  }
  // Rank 0 runs pp-1 = 3 warm-up forwards before idling; the last rank starts idle.
  CHECK(r.out.find("rank 0  |F") != std::string::npos);
  CHECK(r.out.find("rank 3  |.") != std::string::npos);
}

TEST_CASE("simulate --trace writes a Chrome trace", "[cli][simulate]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parallax_trace_" + std::to_string(getpid()) + ".json"))
                               .string();
  const Result r = run("simulate " + kSmall + " --trace " + path);
  REQUIRE(r.code == 0);
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  CHECK(j.at("traceEvents").size() > 64);
  std::filesystem::remove(path);
}

TEST_CASE("simulate: an unrunnable schedule is a one-line input error", "[cli][simulate]") {
  // Interleaved needs m % pp == 0: 6 micro-batches over pp 4.
  const Result r =
      run("simulate --model gpt3-175b --gpus 32 --tp 8 --pp 4 --vpp 2 "
          "--global-batch 6");
  CHECK(r.code == 2);
  CHECK(r.err.find("parallax: error: ") == 0);
  CHECK(r.err.find("--global-batch") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
