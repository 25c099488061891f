// Drives `parallax topo` and `parallax placement`: JSON keys in nccl-tests terms, hand-checked
// numbers, one-line errors naming the flag or field with exit code 2.
#include <catch2/catch.hpp>

#include "cli_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using Result = parallax::test::CliResult;

Result run(const std::string& args) { return parallax::test::run_cli(args); }

void expect_one_line_error(const Result& r, const std::string& field) {
  CHECK(r.code == 2);
  CHECK(r.err.find(field) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("topo collective --json: nccl-tests keys and the 8xA100 anchor") {
  const Result r = run("topo collective dgx-a100-superpod --op all_reduce --ranks 0-7 --bytes 1G --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  // 1 GiB: 14 x 3.4 us + 1.75 x 2^30 / 230e9 = 8.2172 ms; busbw = 1.75 x 2^30 / t.
  const double t = 14 * 3.4e-6 + 1.75 * 1073741824.0 / 230e9;
  CHECK(j.at("time_s").get<double>() == Approx(t).epsilon(1e-9));
  CHECK(j.at("algbw_gbps").get<double>() == Approx(1073741824.0 / t / 1e9).epsilon(1e-9));
  CHECK(j.at("busbw_gbps").get<double>() == Approx(1.75 * 1073741824.0 / t / 1e9).epsilon(1e-9));
}

TEST_CASE("topo show lists the tiers") {
  const Result r = run("topo show dgx-h100-superpod --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("gpus") == 1016);
  CHECK(j.at("vertices").at("leaf") == 32);  // 4 scalable units of 32 nodes x 8 rails
  CHECK(j.at("tiers").size() == 2);
}

TEST_CASE("topo import turns an NCCL dump into a node description") {
  const Result r = run(std::string("topo import ") + PARALLAX_SOURCE_DIR + "/tests/data/dgx-a100-nccl-topo.xml");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("gpu_nic").size() == 8);
}

TEST_CASE("placement lists every group and warns when TP crosses nodes") {
  Result r = run("placement --model gpt3-175b --gpus 64 --tp 8 --pp 4 --global-batch 64 --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("ranks").size() == 64);
  CHECK(j.at("groups").at("tp").size() == 8);
  CHECK(j.at("groups").at("dp").size() == 32);
  CHECK(j.at("groups").at("pp").size() == 16);
  CHECK(j.at("warnings").empty());
  r = run("placement --model gpt3-175b --gpus 64 --tp 8 --pp 4 --global-batch 64 --order dp-tp-pp");
  REQUIRE(r.code == 0);
  CHECK(r.err.find("warning: TP group [0 2 4 6 8 10 12 14] spans 2 nodes") != std::string::npos);
}

TEST_CASE("bad topology input: one line naming the field, exit 2") {
  expect_one_line_error(run("topo collective dgx-a100-superpod --ranks 0-4480 --bytes 1G"), "--ranks: rank 4480 is outside");
  expect_one_line_error(run("topo collective dgx-a100-superpod --ranks 0-7 --bytes 0"), "--bytes");
  expect_one_line_error(run("topo collective dgx-a100-superpod --ranks 0-7 --bytes 12Q"), "--bytes");
  expect_one_line_error(run("topo collective dgx-a100-superpod --ranks 7-0"), "--ranks");
  expect_one_line_error(run("topo collective dgx-a100-superpod --ranks 0-7 --op all_gather --algo tree"), "--algo");
  // A node description with 2 GPUs in an 8-GPU cluster.
  const std::string path = (std::filesystem::temp_directory_path() / ("node_" + std::to_string(getpid()) + ".json")).string();
  std::ofstream(path) << R"({"vertices": [{"name": "GPU0", "kind": "gpu"}, {"name": "GPU1", "kind": "gpu"},
    {"name": "NIC0", "kind": "nic"}], "links": [{"from": "GPU0", "to": "GPU1", "kind": "nvlink",
    "bandwidth_bytes_per_s": 1e11}, {"from": "GPU0", "to": "NIC0", "kind": "pcie", "bandwidth_bytes_per_s": 2.5e10},
    {"from": "GPU1", "to": "NIC0", "kind": "pcie", "bandwidth_bytes_per_s": 2.5e10}], "gpu_nic": ["NIC0", "NIC0"]})";
  expect_one_line_error(run("topo show dgx-a100-superpod --node " + path), "$.vertices: GPUs per node do not match");
  std::ofstream(path) << R"({"vertices": [{"name": "GPU0", "kind": "gpu"}], "links": [{"from": "GPU0", "to": "GPU7",
    "kind": "nvlink", "bandwidth_bytes_per_s": 1e11}], "gpu_nic": []})";
  expect_one_line_error(run("topo show dgx-a100-superpod --node " + path), "$.links[0].to: unknown vertex \"GPU7\"");
  std::filesystem::remove(path);
}

TEST_CASE("concurrent copies of a group share links") {
  // 8 DP-like groups of one GPU on each of 16 nodes (GPU j of nodes 0..15), on a cluster with 4
  // NICs per node: GPUs 2i and 2i+1 share NIC i, so each ring gets 24/2 = 12 GB/s.
  const std::string path = (std::filesystem::temp_directory_path() / ("c4_" + std::to_string(getpid()) + ".json")).string();
  Result shown = run("presets show clusters/dgx-a100-superpod");
  REQUIRE(shown.code == 0);
  auto c = nlohmann::json::parse(shown.out);
  c["inter_node"]["nics_per_node"] = 4;
  std::ofstream(path) << c.dump();
  std::string ranks;
  for (int i = 0; i < 16; ++i) {
    if (i > 0) ranks += ',';
    ranks += std::to_string(8 * i);
  }
  const double S = 4e9;
  Result r = run("topo collective " + path + " --ranks " + ranks + " --bytes 4e9 --groups 8 --group-stride 1 --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out).at("time_s").get<double>() ==
        Approx(30 * 5e-6 + 2 * 15.0 / 16 * S / 12e9).epsilon(1e-9));
  r = run("topo collective " + path + " --ranks " + ranks + " --bytes 4e9 --json");  // alone: 24 GB/s
  CHECK(nlohmann::json::parse(r.out).at("time_s").get<double>() ==
        Approx(30 * 5e-6 + 2 * 15.0 / 16 * S / 24e9).epsilon(1e-9));
  std::filesystem::remove(path);
}
