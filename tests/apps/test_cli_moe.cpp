// Mixture-of-experts models through the real binary (issue 27, the model layer): `presets show`
// gives total and active parameters, its output reads back as a model file, and every command
// that would cost, simulate or export the model refuses it with one line and exit code 2.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace {

using Result = parallax::test::CliResult;

Result run(const std::string& args) { return parallax::test::run_cli(args); }

using parallax::test::count_lines;

const char* const kRefusal =
    "mixture-of-experts models (num_experts 8) are not costed, planned, simulated, exported or run yet";

}  // namespace

TEST_CASE("presets show: an MoE model's total and active parameters") {
  const Result r = run("presets show models/mixtral-8x7b");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["moe"]["num_experts"].get<int64_t>() == 8);
  // Mixtral of Experts (Jiang et al. 2024): 46.7B total, 12.9B active per token; the counts must
  // round to them (tests/core derives them exactly by hand).
  CHECK(std::abs(j["parameters"]["total"].get<double>() - 46.7e9) <= 0.05e9);
  CHECK(std::abs(j["parameters"]["active"].get<double>() - 12.9e9) <= 0.05e9);
  // A dense model's counts are equal.
  const auto dense = nlohmann::json::parse(run("presets show models/llama3-8b").out);
  CHECK(dense["parameters"]["total"] == dense["parameters"]["active"]);
}

TEST_CASE("MoE models are refused by every command that would cost them") {
  for (const std::string& cmd :
       {std::string("predict --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64"),
        std::string("plan --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64 --global-batch 512"),
        std::string("simulate --model moe-tiny --cluster cpu-local --gpus 1"),
        std::string("placement --model moe-tiny --cluster cpu-local --gpus 1"),
        std::string("capacity --model mixtral-8x7b --cluster dgx-h100-superpod --tokens 1e12 --gpus 64")}) {
    INFO(cmd);
    const Result r = run(cmd);
    CHECK(r.code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("command line: --model: " + std::string(kRefusal)) != std::string::npos);
  }
  // A plan file's model: refused where the file is read, whatever reads it.
  const std::string plan = std::string(PARALLAX_SOURCE_DIR) + "/tests/errors/data/plan-moe-tiny.json";
  const Result e = run("export --plan " + plan + " --format megatron");
  CHECK(e.code == 2);
  CHECK(e.err.find("$.model.moe.num_experts: " + std::string(kRefusal)) != std::string::npos);
}

TEST_CASE("presets show output reads back as a model file, its counts checked") {
  const Result shown = run("presets show models/moe-tiny");
  REQUIRE(shown.code == 0);
  const auto path =
      (std::filesystem::temp_directory_path() / ("moe_tiny_" + std::to_string(getpid()) + ".json")).string();
  std::ofstream(path) << shown.out;
  // It reads (the refusal comes after the model file was read whole, counts included).
  Result r = run("predict --model " + path + " --cluster cpu-local --gpus 1");
  CHECK(r.code == 2);
  CHECK(r.err.find("--model: " + std::string(kRefusal)) != std::string::npos);
  // One more layer with the old counts: refused, naming the count.
  auto j = nlohmann::json::parse(shown.out);
  j["layers"] = 5;
  std::ofstream(path) << j.dump();
  r = run("predict --model " + path + " --cluster cpu-local --gpus 1");
  CHECK(r.code == 2);
  CHECK(r.err.find("$.parameters.") != std::string::npos);
  std::filesystem::remove(path);
}
