// Drives `parallax calibrate --from-nccl-tests`: the profile it refits by default, --collective
// for output that does not name its binary, and the warning on a fit the sizes barely constrain.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace {

using Result = parallax::test::CliResult;

std::string data(const std::string& name) { return std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A file in the temporary directory, unique per process.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("parallax_cli_calibrate_" + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace

TEST_CASE("calibrate --from-nccl-tests without --profile refits the cluster's profile") {
  // --help: "--profile  profile to refit (default: the cluster's)"; dgx-a100-superpod's is
  // a100-megatron (presets/clusters/dgx-a100-superpod.json).
  const std::string out = temp("default.json");
  const Result r = parallax::test::run_cli("calibrate --from-nccl-tests " + data("nccl-tests-all-reduce-8xa100.txt") +
                                           " --cluster dgx-a100-superpod --out " + out);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json p = read_json(out);
  const nlohmann::json base = read_json(std::string(PARALLAX_SOURCE_DIR) + "/presets/profiles/a100-megatron.json");
  CHECK(p.at("name") == base.at("name"));
  CHECK(p.at("gemm_efficiency_by_min_dim") == base.at("gemm_efficiency_by_min_dim"));
  REQUIRE(p.at("communication").size() == 1);
  CHECK(p.at("communication")[0].at("ranks") == 8);
  std::filesystem::remove(out);
  // Neither a cluster nor a profile: one line naming --cluster.
  const Result none = parallax::test::run_cli("calibrate --from-nccl-tests " + data("nccl-tests-all-reduce-8xa100.txt") +
                                              " --out " + out);
  CHECK(none.code == 2);
  CHECK(none.err.find("--cluster") != std::string::npos);
  CHECK(std::count(none.err.begin(), none.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("calibrate warns, one line naming the file, when two sizes fit the latency") {
  // tests/data/nccl-tests-all-reduce-2-sizes-8xa100.txt: 512 MiB and 1 GiB only. The two points
  // fit alpha = 4743.9 us - (8828.8 - 4743.9) us = 659.0 us: nothing small constrains it.
  const std::string out = temp("two.json");
  const std::string file = data("nccl-tests-all-reduce-2-sizes-8xa100.txt");
  const Result r = parallax::test::run_cli("calibrate --from-nccl-tests " + file +
                                           " --profile a100-megatron --out " + out);
  INFO(r.err);
  REQUIRE(r.code == 0);  // the fit is kept
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.rfind("parallax: warning: " + file + ": ", 0) == 0);
  CHECK(r.err.find("2 sizes") != std::string::npos);
  CHECK(r.err.find("64 KiB") != std::string::npos);
  const nlohmann::json p = read_json(out);
  CHECK(p.at("communication")[0].at("alpha_s").get<double>() == Approx(659.0e-6).epsilon(1e-3));
  std::filesystem::remove(out);
  // 31 sizes from 8 B: no warning.
  const Result ok = parallax::test::run_cli("calibrate --from-nccl-tests " + data("nccl-tests-all-reduce-8xa100.txt") +
                                            " --profile a100-megatron --out " + out);
  CHECK(ok.code == 0);
  CHECK(ok.err.empty());
  std::filesystem::remove(out);
}

TEST_CASE("calibrate --collective names the collective of output that does not") {
  // The 2021 all_gather output without its command line: no redop column, so all_gather,
  // reduce_scatter and alltoall print the same table (busbw/algbw = 7/8 on 8 ranks).
  std::string text = read_file(data("nccl-tests-all-gather-2021-8xv100.txt"));
  text = text.substr(text.find('\n') + 1);
  const std::string in = temp("ag.txt"), out = temp("ag.json");
  std::ofstream(in) << text;
  const Result refused = parallax::test::run_cli("calibrate --from-nccl-tests " + in +
                                                 " --profile a100-megatron --out " + out);
  CHECK(refused.code == 2);
  CHECK(refused.err.find(in + ": collective: ") != std::string::npos);
  CHECK(refused.err.find("--collective") != std::string::npos);
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  const Result r = parallax::test::run_cli("calibrate --from-nccl-tests " + in +
                                           " --collective all_gather --profile a100-megatron --out " + out);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json p = read_json(out);
  CHECK(p.at("communication")[0].at("collective") == "all_gather");
  CHECK(p.at("communication")[0].at("ranks") == 8);
  // Output that names its collective must agree with --collective.
  const Result clash = parallax::test::run_cli("calibrate --from-nccl-tests " + data("nccl-tests-all-reduce-8xa100.txt") +
                                               " --collective all_gather --profile a100-megatron --out " + out);
  CHECK(clash.code == 2);
  CHECK(clash.err.find("the output names all_reduce but --collective says all_gather") != std::string::npos);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}
