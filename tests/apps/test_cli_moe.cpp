// Mixture-of-experts models through the real binary (issue 27): `presets show` gives total and
// active parameters, its output reads back as a model file; Megatron-Core plans are predicted,
// searched with expert parallelism and exported with its MoE flags; stacks without an MoE layer
// refuse the model with one line and exit code 2.
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

TEST_CASE("MoE models: costed on Megatron-Core, refused with one line by stacks without an MoE layer") {
  // Megatron-Core: predicted, planned with expert parallelism, and the all-to-all shown.
  const Result pr = run("predict --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64 --seq-len 4096 "
                        "--global-batch 256 --stack megatron-core --ep 8");
  CHECK(pr.code == 0);
  CHECK(pr.out.find("ep=8") != std::string::npos);
  CHECK(pr.out.find("expert-parallel all-to-all") != std::string::npos);
  const Result pl = run("plan --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64 --seq-len 4096 "
                        "--global-batch 256 --stack megatron-core --explain");
  CHECK(pl.code == 0);
  CHECK(pl.out.find("expert all-to-all: ep ") != std::string::npos);
  CHECK(pl.out.find("rejected by rule") != std::string::npos);
  // Stacks without one: the model named, the stack's reason given.
  for (const std::string& cmd :
       {std::string("predict --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64"),
        std::string("plan --model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64 --global-batch 512 --stack torchtitan")}) {
    INFO(cmd);
    const Result r = run(cmd);
    CHECK(r.code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("runs dense models only (got num_experts 8)") != std::string::npos);
  }
  // The executor's stack runs MoE models with expert parallelism, each expert sharded over tp
  // (etp = tp) and, with ep > 1, the optimizer unsharded (presets/stacks/parallax-executor.json).
  CHECK(run("simulate --model moe-tiny --cluster cpu-local --gpus 1").code == 0);
  const Result ep = run("predict --model moe-tiny --cluster cpu-local --gpus 2 --ep 2");
  CHECK(ep.code == 0);
  CHECK(ep.out.find("ep=2") != std::string::npos);
  const Result etp = run("predict --model moe-tiny --cluster cpu-local --gpus 2 --tp 2 --sp --etp 1");
  CHECK(etp.code == 2);
  CHECK(count_lines(etp.err) == 1);
  CHECK(etp.err.find("--etp: stack \"parallax-executor\" shards the experts over tp as the dense MLP: "
                     "etp must be 0 or tp 2 (got etp 1)") != std::string::npos);
  const Result zero = run("predict --model moe-tiny --cluster cpu-local --gpus 2 --ep 2 --zero 1");
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--zero: stack \"parallax-executor\" runs expert parallelism with ZeRO stage 0 "
                      "only (got zero 1 with ep 2)") != std::string::npos);
  // A plan file's model on a stack without an MoE layer: refused where the file is read.
  const std::string plan = std::string(PARALLAX_SOURCE_DIR) + "/tests/errors/data/plan-moe-tiny-megatron-lm.json";
  const Result e = run("export --plan " + plan + " --format megatron");
  CHECK(e.code == 2);
  CHECK(e.err.find("$.model.moe.num_experts: stack \"megatron-lm\" runs dense models only") != std::string::npos);
}

TEST_CASE("MoE: the Megatron-LM launch carries Megatron-Core's MoE flags") {
  const auto path =
      (std::filesystem::temp_directory_path() / ("moe_plan_" + std::to_string(getpid()) + ".json")).string();
  const Result pl = run("plan --model deepseek-v3-shaped --cluster deepseek-h800 --gpus 256 --stack megatron-core "
                        "--global-batch 512 --out " + path);
  REQUIRE(pl.code == 0);
  const auto plan = nlohmann::json::parse(std::ifstream(path));
  const Result ex = run("export --plan " + path + " --format megatron");
  std::filesystem::remove(path);
  REQUIRE(ex.code == 0);
  // DeepSeek-V3's shape (its report, Section 4.2): 256 routed experts, 8 per token, width 2048,
  // one shared expert of 2048, sigmoid scores, the first three layers dense.
  for (const char* flag : {"--num-experts 256", "--moe-router-topk 8", "--moe-ffn-hidden-size 2048",
                           "--moe-shared-expert-intermediate-size 2048", "--moe-router-score-function sigmoid",
                           "--moe-grouped-gemm", "--moe-layer-freq [0,0,0,1,1,"}) {
    INFO(flag);
    CHECK(ex.out.find(flag) != std::string::npos);
  }
  const int64_t ep = plan["plan"].value("ep", 1);
  CHECK(ex.out.find("--expert-model-parallel-size " + std::to_string(ep)) != std::string::npos);
  // The plan's token dispatcher: alltoall, or the flex dispatcher with its backend.
  const std::string dispatcher = plan["plan"].value("moe_dispatcher", std::string("alltoall"));
  if (dispatcher == "alltoall") {
    CHECK(ex.out.find("--moe-token-dispatcher-type alltoall") != std::string::npos);
  } else {
    CHECK(ex.out.find("--moe-token-dispatcher-type flex") != std::string::npos);
    CHECK(ex.out.find("--moe-flex-dispatcher-backend " + dispatcher) != std::string::npos);
  }
}

// Qwen3-30B-A3B at ep 16 over two DGX H100 nodes (Megatron-Bridge's H100 recipe): HybridEP sends a
// token over the network once if any of its 8 experts sits on the other node's 64, probability
// 1 - P, P = C(64, 8) / C(128, 8); the alltoall dispatcher sends 8 rows, half of them to the other
// node. Both run at the NIC's bandwidth, so one dispatch takes 4 / (1 - P) times as long with
// alltoall (the microsecond step latency aside). The planner tries both and takes the faster.
TEST_CASE("MoE: the flex dispatcher's dispatch across nodes by hand, and the planner takes it") {
  const std::string job = "--model qwen3-30b-a3b --seq-len 4096 --cluster dgx-h100-superpod --gpus 16 "
                          "--global-batch 1024 --dtype fp8 --stack megatron-core ";
  const std::string plan = "--tp 1 --pp 1 --ep 16 --mbs 1 --recompute none --zero 1 --json ";
  const Result a2a = run("predict " + job + plan + "--moe-dispatcher alltoall");
  const Result hyb = run("predict " + job + plan + "--moe-dispatcher hybridep");
  REQUIRE(a2a.code == 0);
  REQUIRE(hyb.code == 0);
  double p = 1;
  for (int i = 0; i < 8; ++i) p *= (64.0 - i) / (128.0 - i);
  const double t_a2a = nlohmann::json::parse(a2a.out)["ep_all_to_all"]["time_s"].get<double>();
  const double t_hyb = nlohmann::json::parse(hyb.out)["ep_all_to_all"]["time_s"].get<double>();
  CHECK(t_a2a / t_hyb == Approx(4 / (1 - p)).epsilon(0.02));
  // The planner's best plan at ep 16 dispatches with HybridEP, the stack's flex backend.
  const Result pl = run("plan " + job + "--json --top 200");
  REQUIRE(pl.code == 0);
  std::string best_ep16;
  const auto ranked = nlohmann::json::parse(pl.out);
  for (const auto& x : ranked["plans"])
    if (x["plan"].value("ep", 1) == 16) {
      best_ep16 = x["plan"].value("moe_dispatcher", std::string("alltoall"));
      break;
    }
  CHECK(best_ep16 == "hybridep");
}

TEST_CASE("presets show output reads back as a model file, its counts checked") {
  const Result shown = run("presets show models/moe-tiny");
  REQUIRE(shown.code == 0);
  const auto path =
      (std::filesystem::temp_directory_path() / ("moe_tiny_" + std::to_string(getpid()) + ".json")).string();
  std::ofstream(path) << shown.out;
  // It reads, counts included, and is costed.
  Result r = run("predict --model " + path + " --cluster cpu-local --gpus 1");
  CHECK(r.code == 0);
  // One more layer with the old counts: refused, naming the count.
  auto j = nlohmann::json::parse(shown.out);
  j["layers"] = 5;
  std::ofstream(path) << j.dump();
  r = run("predict --model " + path + " --cluster cpu-local --gpus 1");
  CHECK(r.code == 2);
  CHECK(r.err.find("$.parameters.") != std::string::npos);
  std::filesystem::remove(path);
}
