// The closed loop through the real binary: `parallax calibrate --backend cpu` microbenchmarks,
// an executed run, `parallax compare`, `calibrate --from` refits, and the refusals that must
// leave an existing profile untouched.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "mpi_run.hpp"

using namespace parallax::test;
using nlohmann::json;

namespace {

std::string px() { return PARALLAX_BIN; }

// One calibrated profile for every test here: ctest's fixture test writes it once and passes its
// path in PARALLAX_TEST_CPU_PROFILE (the microbenchmarks take seconds, minutes under the
// sanitizers, and each test case is its own process); run by hand, the binary calibrates itself.
const std::string& profile_path() {
  static const std::string path = [] {
    if (const char* given = std::getenv("PARALLAX_TEST_CPU_PROFILE")) {
      if (!std::ifstream(given)) throw std::runtime_error(std::string("no profile at ") + given);
      return std::string(given);
    }
    const std::string dir = scratch_dir("calibrate_profile");
    const std::string p = dir + "/cpu.json";
    const int rc = shell(px() + " calibrate --backend cpu --np 2 --model gpt-tiny --mbs 2 --repeats 2"
                                " --warmup 1 --out " + p + " > " + dir + "/log.txt 2>&1");
    if (rc != 0) throw std::runtime_error("calibrate failed: " + slurp(dir + "/log.txt"));
    return p;
  }();
  return path;
}

std::string cpu_plan(const std::string& dir, const std::string& flags) {
  const std::string path = dir + "/plan.json";
  const std::string cmd = px() + " predict --model gpt-tiny --cluster cpu-local --dtype fp32"
                                 " --framework parallax-executor --global-batch 4 --mbs 2 "
                                 "--recompute none " + flags + " --profile " + profile_path() +
                          " --out " + path + " > /dev/null";
  if (shell(cmd) != 0) throw std::runtime_error("predict failed: " + cmd);
  return path;
}

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST_CASE("calibrate --backend cpu writes a profile with provenance, GEMM shapes and collective fits", "[slow][calibrated]") {
  const json p = read(profile_path());
  CHECK(p.at("provenance").at("backend") == "cpu");
  CHECK(p.at("provenance").at("threads_per_rank") == 1);  // 2 ranks on 2 cores
  // gpt-tiny at tp 1 and 2, micro-batch 2 (128 rows): the qkv forward GEMM of each.
  bool tp1 = false, tp2 = false;
  for (const auto& g : p.at("gemm_efficiency_by_shape")) {
    if (g.at("role") != "forward" || g.at("m") != 128 || g.at("k") != 128) continue;
    tp1 = tp1 || g.at("n") == 384;
    tp2 = tp2 || g.at("n") == 192;
  }
  CHECK(tp1);
  CHECK(tp2);
  std::set<std::string> colls;
  for (const auto& c : p.at("communication")) {
    CHECK(c.at("ranks") == 2);
    CHECK(c.at("busbw_bytes_per_s").get<double>() > 0);
    colls.insert(c.at("collective").get<std::string>());
  }
  CHECK(colls == std::set<std::string>{"all_gather", "all_reduce", "reduce_scatter", "send_recv"});
}

// A grouped-query model's layer is timed at its own widths: the fused q|k|v projection is
// (heads + 2 kv_heads) x head_dim wide, as Llama's and the executor's (chunk.cpp) are. llama-tiny
// (hidden 64, 4 query heads, 2 KV heads, head_dim 16, SwiGLU FFN 128, vocab 256) at tp 1, one
// micro-batch of 32 tokens: the forward GEMMs (32, n, 64) are qkv n = (4 + 2 x 2) x 16 = 128,
// proj n = 64, fc n = 2 x 128 = 256 and head n = 256. With a KV head per query head qkv would be
// 3 x 64 = 192 wide.
TEST_CASE("calibrate times a grouped-query model's qkv projection and attention at its KV heads", "[slow][release-only]") {
  const std::string dir = scratch_dir("calibrate_gqa");
  const std::string out = dir + "/cpu.json";
  const int rc = shell(px() + " calibrate --backend cpu --np 2 --tp 1 --model llama-tiny --mbs 1"
                              " --repeats 1 --warmup 1 --out " + out + " > " + dir + "/log.txt 2>&1");
  REQUIRE(rc == 0);
  const json profile = read(out);
  std::set<double> widths;
  for (const auto& g : profile.at("gemm_efficiency_by_shape")) {
    if (g.at("role") == "forward" && g.at("m") == 32 && g.at("k") == 64) widths.insert(g.at("n").get<double>());
  }
  CHECK(widths == std::set<double>{64, 128, 256});
}

TEST_CASE("compare prints predicted vs measured for an executed run, refit uses its GEMM times", "[slow][calibrated]") {
  const std::string dir = scratch_dir("calibrate_compare");
  const std::string plan = cpu_plan(dir, "--gpus 2 --tp 2 --pp 1");
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 2 --threads 1 --out " + dir + "/m.json", dir + "/run.log") == 0);
  REQUIRE(shell(px() + " compare --measurements " + dir + "/m.json --profile " + profile_path() +
                " --json > " + dir + "/cmp.json") == 0);
  const json c = read(dir + "/cmp.json");
  bool iteration = false, gemm = false, tp = false;
  for (const auto& r : c.at("runs")[0].at("rows")) {
    CHECK(std::isfinite(r.at("error").get<double>()));
    CHECK(r.at("predicted_s").get<double>() > 0);
    iteration = iteration || r.at("kind") == "iteration";
    gemm = gemm || r.at("name") == "gemm";
    tp = tp || (r.at("kind") == "collective" && r.at("name") == "tp");
  }
  CHECK(iteration);
  CHECK(gemm);
  CHECK(tp);

  // Refit: every GEMM shape of the run is refitted from its measured time, so compare with the
  // refitted profile predicts the GEMM class at what the run measured (the profile's cache
  // blend included: the refit scales warm and cold efficiency together).
  REQUIRE(shell(px() + " calibrate --from " + dir + "/m.json --profile " + profile_path() +
                " --out " + dir + "/refit.json > /dev/null") == 0);
  REQUIRE(shell(px() + " compare --measurements " + dir + "/m.json --profile " + dir +
                "/refit.json --json > " + dir + "/cmp2.json") == 0);
  bool found = false;
  const json cmp2 = read(dir + "/cmp2.json");  // held: a range-for over a temporary's member dangles
  for (const auto& r : cmp2.at("runs")[0].at("rows"))
    if (r.at("kind") == "op class" && r.at("name") == "gemm") {
      CHECK(r.at("predicted_s").get<double>() == Approx(r.at("measured_s").get<double>()).epsilon(1e-6));
      found = true;
    }
  CHECK(found);
  // Without a cache size the refitted forward efficiency of fc (and, at vocab 512 / tp 2, of the
  // logits) is their measured FLOP/s over the cpu-core fp32 peak.
  json cold_profile = read(profile_path());
  cold_profile.erase("cache_bytes_per_rank");
  {
    std::ofstream o(dir + "/cold.json");
    o << cold_profile.dump();
  }
  REQUIRE(shell(px() + " calibrate --from " + dir + "/m.json --profile " + dir +
                "/cold.json --out " + dir + "/refit_cold.json > /dev/null") == 0);
  const json m = read(dir + "/m.json");
  double flops = 0, seconds = 0;
  for (const auto& rank : m.at("ranks"))
    for (const auto& op : rank.at("ops"))
      if (op.at("name") == "matmul_fc" || op.at("name") == "matmul_logits") {
        REQUIRE(op.at("shape") == "128x128x256");  // N x C x OC: rows, hidden, ffn/tp (vocab/tp)
        flops += 2.0 * 128 * 128 * 256 * op.at("calls").get<double>();
        seconds += op.at("total_s").get<double>();
      }
  const double peak = 192e9;  // presets/gpus/cpu-core.json
  found = false;
  const json refit_cold = read(dir + "/refit_cold.json");
  for (const auto& g : refit_cold.at("gemm_efficiency_by_shape"))
    if (g.at("role") == "forward" && g.at("m") == 128 && g.at("n") == 256 && g.at("k") == 128) {
      CHECK(g.at("efficiency").get<double>() == Approx(flops / seconds / peak).epsilon(1e-9));
      found = true;
    }
  CHECK(found);
}

TEST_CASE("compare refuses a run on other threads per rank than the profile was measured with", "[slow][calibrated]") {
  const std::string dir = scratch_dir("calibrate_threads");
  const std::string plan = cpu_plan(dir, "--gpus 1 --tp 1 --pp 1");
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 1 --threads 2 --out " + dir + "/m.json", dir + "/run.log") == 0);
  const int rc = shell(px() + " compare --measurements " + dir + "/m.json --profile " + profile_path() +
                       " > /dev/null 2> " + dir + "/err.txt");
  CHECK(rc == 2);
  const std::string err = slurp(dir + "/err.txt");
  CHECK_THAT(err, Catch::Contains("$.machine.threads_per_rank") && Catch::Contains("--threads 1"));
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("bad measurements and logs are refused with one line and leave the old profile untouched", "[slow][calibrated]") {
  const std::string dir = scratch_dir("calibrate_bad");
  const std::string out = dir + "/profile.json";
  REQUIRE(shell("cp " + profile_path() + " " + out) == 0);
  const std::string before = slurp(out);
  auto refused = [&](const std::string& args, const std::string& words) {
    const int rc = shell(px() + " calibrate " + args + " --out " + out + " > /dev/null 2> " + dir + "/err.txt");
    CHECK(rc == 2);
    const std::string err = slurp(dir + "/err.txt");
    INFO(err);
    CHECK_THAT(err, Catch::Contains(words));
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK(slurp(out) == before);
  };
  // A run with a negative iteration time.
  const std::string plan = cpu_plan(dir, "--gpus 1 --tp 1 --pp 1");
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 2 --threads 1 --out " + dir + "/m.json", dir + "/run.log") == 0);
  json m = read(dir + "/m.json");
  m["iterations"][1]["time_s"] = -0.5;
  std::ofstream(dir + "/neg.json") << m.dump();
  refused("--from " + dir + "/neg.json --profile " + out, "$.iterations[1].time_s");
  // A run whose plan does not match its ranks.
  m = read(dir + "/m.json");
  m["world_size"] = 2;
  std::ofstream(dir + "/mismatch.json") << m.dump();
  refused("--from " + dir + "/mismatch.json --profile " + out, "does not match");
  // A Megatron-LM log with no iteration lines.
  std::ofstream(dir + "/empty.log") << "using world size: 1\n[after training is done]\n";
  refused("--from-megatron-log " + dir + "/empty.log --plan " + plan + " --profile " + out, "no");
  // nccl-tests output that is not nccl-tests output.
  std::ofstream(dir + "/junk.txt") << "hello\n";
  refused("--from-nccl-tests " + dir + "/junk.txt --profile " + out, "junk.txt");
}
