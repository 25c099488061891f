// Drives the real `parallax` binary: exit codes, one-line errors naming the flag or JSON path,
// JSON output keys, atomic --out, and the plan file round trip.
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

#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"

namespace {

using Result = parallax::test::CliResult;

Result run(const std::string& args) { return parallax::test::run_cli(args); }

using parallax::test::count_lines;

// Bad input: exit code 2 and one line on stderr that contains `expect`.
Result expect_bad_input(const std::string& args, const std::string& expect) {
  INFO(args);
  const Result r = run(args);
  CHECK(r.code == 2);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(expect) != std::string::npos);
  return r;
}

std::string tmp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("version and help flags succeed") {
  const Result v = run("--version");
  CHECK(v.code == 0);
  CHECK(v.out.find("parallax 0.1.0") != std::string::npos);
  for (const char* sub : {"predict", "validate", "presets"}) {
    const Result h = run(std::string(sub) + " --help");
    CHECK(h.code == 0);
    CHECK(h.out.find("--") != std::string::npos);
  }
}

TEST_CASE("version lists the executor backends this build has") {
  // cpu with the MPI executor, cuda too when built with PARALLAX_CUDA (CI builds it: nvcc, no GPU).
  const Result v = run("--version");
  CHECK(v.code == 0);
  INFO(v.out);
  CHECK(v.out.find(std::string("(backends: ") + PARALLAX_EXPECT_BACKENDS + ")") != std::string::npos);
}

TEST_CASE("run --backend takes cpu or cuda and refuses cuda when built without it", "[mpi]") {
  const std::string backends = PARALLAX_EXPECT_BACKENDS;
  if (backends.find("cpu") == std::string::npos) {
    CHECK(run("run --help").code != 0);  // no executor in this build: no run command
    return;
  }
  const std::string plan = (std::filesystem::temp_directory_path() /
                            ("parallax_backend_plan_" + std::to_string(getpid()) + ".json")).string();
  REQUIRE(run("predict --model gpt-tiny --cluster dgx-a100-superpod --gpus 1 --tp 1 --pp 1"
              " --global-batch 4 --mbs 1 --out " + plan).code == 0);
  expect_bad_input("run --plan " + plan + " --backend tpu", "--backend");
  // With the CUDA backend built, the no-device case is tests/kernels/cuda's (it needs to know
  // whether the machine has a GPU); without it, cuda is refused by name.
  if (backends.find("cuda") == std::string::npos)
    expect_bad_input("run --plan " + plan + " --backend cuda", "built without the CUDA backend");
  std::filesystem::remove(plan);
}

TEST_CASE("predict --json on the defaults has every documented key") {
  const Result r = run("predict --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"iteration_time_s", "tokens_per_s", "model_tflops_per_gpu",
                        "hardware_tflops_per_gpu", "megatron_tflops_per_gpu", "mfu", "fits"}) {
    CHECK(j.contains(k));
  }
  CHECK(j["fits"].get<bool>());
  CHECK(j["memory"]["peak_bytes"].get<double>() > 0);
  REQUIRE(j["memory"]["per_stage"].size() == 35);
  for (const char* k : {"weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                        "buffers_bytes"}) {
    CHECK(j["memory"]["per_stage"][0].contains(k));
  }
  for (const char* k : {"compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_exposed_s", "bubble_s",
                        "optimizer_s"}) {
    CHECK(j["time"].contains(k));
  }
  // The defaults are the MT-NLG plan: model FLOPs 72 B s L h^2 (...) with B = 1920.
  const double B = 1920, s = 2048, L = 105, h = 20480, V = 51200;  // vocab padded to 128 * tp
  CHECK(j["model_flops_per_iteration"].get<double>() ==
        Approx(72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))));
}

namespace {

// The interval (docs/predict.md): its ends bracket the prediction, a time's as a rate's inverted.
void check_interval(const nlohmann::json& iv, double time_s, double tokens_per_s, double level) {
  CHECK(iv["level"].get<double>() == level);
  CHECK(iv["iteration_time_s"][0].get<double>() < time_s);
  CHECK(iv["iteration_time_s"][1].get<double>() > time_s);
  CHECK(iv["tokens_per_s"][0].get<double>() < tokens_per_s);
  CHECK(iv["tokens_per_s"][1].get<double>() > tokens_per_s);
  CHECK(iv["iteration_time_s"][0].get<double>() * iv["tokens_per_s"][1].get<double>() ==
        Approx(time_s * tokens_per_s));
  CHECK(iv["sources"].get<int>() >= iv["sources_needed"].get<int>());
  CHECK(iv["basis"].size() + iv["dropped"].size() == 8);  // every feature kept or given up
}

}  // namespace

TEST_CASE("predict, plan and capacity --json carry the prediction interval of every figure") {
  const Result r80 = run("predict --json");
  const Result r50 = run("predict --json --interval-level 0.5");
  REQUIRE(r80.code == 0);
  REQUIRE(r50.code == 0);
  const auto p80 = nlohmann::json::parse(r80.out), p50 = nlohmann::json::parse(r50.out);
  const double t = p80["iteration_time_s"].get<double>(), tps = p80["tokens_per_s"].get<double>();
  check_interval(p80["interval"], t, tps, 0.8);
  check_interval(p50["interval"], t, tps, 0.5);
  // A lower level is a narrower interval.
  CHECK(p50["interval"]["iteration_time_s"][0].get<double>() > p80["interval"]["iteration_time_s"][0].get<double>());
  CHECK(p50["interval"]["iteration_time_s"][1].get<double>() < p80["interval"]["iteration_time_s"][1].get<double>());
  const Result plan = run("plan --json --top 3");
  REQUIRE(plan.code == 0);
  const auto pj = nlohmann::json::parse(plan.out);
  REQUIRE(pj["plans"].size() == 3);
  for (const auto& p : pj["plans"])
    check_interval(p["interval"], p["iteration_time_s"].get<double>(), p["tokens_per_s"].get<double>(), 0.8);
  // A plan is tied with the winner where its ranking time is within the ratio error of the winner's.
  const double ratio = pj["ties"]["ratio"].get<double>(), win = pj["plans"][0]["ranking_time_s"].get<double>();
  CHECK(ratio > 1);
  CHECK(!pj["plans"][0]["tied_with_winner"].get<bool>());
  for (size_t i = 1; i < pj["plans"].size(); ++i)
    CHECK(pj["plans"][i]["tied_with_winner"].get<bool>() == (pj["plans"][i]["ranking_time_s"].get<double>() <= win * ratio));
  const Result cap = run("capacity --json --tokens 1e11 --gpus 1120,2240 --price 2");
  REQUIRE(cap.code == 0);
  const auto cj = nlohmann::json::parse(cap.out);
  REQUIRE(cj["rows"].size() == 2);
  for (const auto& row : cj["rows"]) {
    const auto& iv = row["interval"];
    check_interval(iv, row["prediction"]["iteration_time_s"].get<double>(),
                   row["prediction"]["tokens_per_s"].get<double>(), 0.8);
    CHECK(iv["days"][0].get<double>() < row["days"].get<double>());
    CHECK(iv["days"][1].get<double>() > row["days"].get<double>());
    CHECK(iv["cost_usd"][1].get<double>() / row["cost_usd"].get<double>() ==
          Approx(iv["iteration_time_s"][1].get<double>() / row["prediction"]["iteration_time_s"].get<double>()));
  }
  expect_bad_input("predict --interval-level 1", "--interval-level");
}

TEST_CASE("capacity's wall-clock days divide by the goodput: Llama 3's 90% unless --goodput says otherwise") {
  // Dubey et al. 2024 (The Llama 3 Herd of Models, section 3.3.4): higher than 90% effective
  // training time over a 54-day snapshot of 405B pre-training.
  const Result r = run("capacity --json --tokens 1e11 --gpus 1120");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["goodput"]["effective_training_share"].get<double>() == 0.9);
  CHECK(j["goodput"]["source"].get<std::string>().find("Llama 3") != std::string::npos);
  const auto& row = j["rows"][0];
  CHECK(row["wall_days"].get<double>() == Approx(row["days"].get<double>() / 0.9));
  const Result half = run("capacity --json --tokens 1e11 --gpus 1120 --goodput 0.5");
  REQUIRE(half.code == 0);
  const auto h = nlohmann::json::parse(half.out);
  CHECK(h["rows"][0]["wall_days"].get<double>() == Approx(2 * row["days"].get<double>()));
  CHECK(h["rows"][0]["days"].get<double>() == row["days"].get<double>());
  // The budget question's answer carries the interval of its days and GPU-hours.
  const Result budget = run("capacity --json --budget-gpu-hours 1e6 --tokens 366e9");
  REQUIRE(budget.code == 0);
  const auto bj = nlohmann::json::parse(budget.out);
  CHECK(bj["interval"]["days"][0].get<double>() < bj["days"].get<double>());
  CHECK(bj["interval"]["days"][1].get<double>() > bj["days"].get<double>());
  CHECK(bj["interval"]["gpu_hours"][1].get<double>() / bj["gpu_hours"].get<double>() ==
        Approx(bj["interval"]["days"][1].get<double>() / bj["days"].get<double>()));
  const Result explain = run("plan --explain");
  REQUIRE(explain.code == 0);
  CHECK(explain.out.find("tied: #2 is within") != std::string::npos);  // the README's #2 is marked 2=
  expect_bad_input("capacity --tokens 1e11 --gpus 1120 --goodput 0", "--goodput");
  expect_bad_input("capacity --tokens 1e11 --gpus 1120 --goodput 1.5", "--goodput");
}

TEST_CASE("the plain output is a readable table with the memory breakdown") {
  const Result r = run("predict");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("iteration time") != std::string::npos);
  CHECK(r.out.find("activations") != std::string::npos);
  CHECK(r.out.find("18 bytes/param") != std::string::npos);
  CHECK(r.out.find("fits") != std::string::npos);
  CHECK(r.out.find("80% interval") != std::string::npos);
}

TEST_CASE("predict --out writes a plan file that reads back to the same plan") {
  const auto path = (std::filesystem::temp_directory_path() /
                     ("parallax_plan_rt_" + std::to_string(getpid()) + ".json"))
                        .string();
  std::filesystem::remove(path);
  const Result r = run("predict --tp 4 --pp 2 --gpus 64 --global-batch 512 --mbs 2 --model "
                       "gpt3-175b --recompute selective --sp --zero 1 --out " + path);
  // gpt3-175b has 96 layers: pp 2 divides; heads 96 divisible by tp 4. It need not fit: --out
  // still writes the evaluated plan.
  REQUIRE(r.code == 0);
  const parallax::PlanFile f = parallax::read_plan_file(parallax::read_json_file(path), path);
  CHECK(f.plan.tp == 4);
  CHECK(f.plan.pp == 2);
  CHECK(f.plan.dp == 8);
  CHECK(f.plan.micro_batch == 2);
  CHECK(f.plan.num_micro_batches == 32);
  CHECK(f.plan.sequence_parallel);
  CHECK(f.plan.zero == 1);
  CHECK(f.model.layers == 96);
  CHECK(f.gpus == 64);
}

TEST_CASE("bad command-line values: one line naming the flag and the rule, exit 2") {
  struct Case {
    const char* args;
    const char* expect;
  };
  const Case cases[] = {
      {"predict --gpus 0", "--gpus"},
      {"predict --gpus 1e30", "--gpus"},
      {"predict --gpus nan", "--gpus"},
      {"predict --tp -1", "--tp"},
      {"predict --tp 3 --gpus 2240", "--gpus"},          // 2240 not divisible by 3 * 35
      {"predict --tp 5 --pp 7 --gpus 2240", "--tp"},     // heads 128 % 5
      {"predict --pp 4 --gpus 2240", "--pp"},            // 105 layers % 4
      {"predict --gpus 4480 --global-batch 1000", "global_batch (1000) must be divisible"},
      {"predict --gpus 10000", "--gpus"},                // more than the cluster's 4480
      {"predict --model no-such-model", "no-such-model"},
      {"predict --cluster /nonexistent/c.json", "cannot read file"},
      {"predict --recompute sometimes", "--recompute"},
      {"predict --zero 4", "--zero"},
      {"predict --vpp 3", "interleaved"},                 // m = 240 not a multiple of pp
      {"predict --sp --tp 1 --pp 1 --gpus 8 --global-batch 8", "--sp"},
      {"predict --bytes-per-param 17", "--bytes-per-param"},
      {"predict --zero 3 --pp 35", "ZeRO"},
      {"predict --pp 4 --gpus 1024 --first-stage-layers 200", "--first-stage-layers"},
      {"predict --pp 4 --gpus 1024 --first-stage-layers 27 --last-stage-layers 27", "--"},
      {"predict --framework nosuch", "--stack: no entry for stack \"nosuch\""},
      {"predict --stack nosuch", "--stack: no entry for stack \"nosuch\""},
      {"predict --attention-kernel nosuch", "--attention-kernel: unknown attention preset"},
      {"validate --runs /nonexistent.json", "cannot read file"},
      {"presets show nosuch", "nosuch"},
      {"predict --no-such-flag", "no-such-flag"},
  };
  for (const Case& c : cases) {
    const Result r = expect_bad_input(c.args, c.expect);
    CHECK(r.err.find("error") != std::string::npos);
  }
}

TEST_CASE("bad model JSON: malformed, unknown key, wrong type, missing field") {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"{\"layers\": 2,", "malformed JSON"},
      {R"({"layers": 2, "hidden": 64, "heads": 4, "seq_len": 8, "vocab": 64, "layrs": 3})",
       "layrs"},
      {R"({"layers": "two", "hidden": 64, "heads": 4, "seq_len": 8, "vocab": 64})", "$.layers"},
      {R"({"hidden": 64, "heads": 4, "seq_len": 8, "vocab": 64})", "$.layers"},
      {R"({"layers": 2, "hidden": 64, "heads": 5, "seq_len": 8, "vocab": 64})", "$.heads"},
      {R"({"layers": 2, "hidden": 1e400, "heads": 4, "seq_len": 8, "vocab": 64})", "$.hidden"},
  };
  int i = 0;
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string path = tmp_file("parallax_bad_model_" + std::to_string(getpid()) + "_" +
                                          std::to_string(i++) + ".json",
                                      c.text);
    const Result r = run("predict --model " + path + " --tp 1 --pp 1 --gpus 1 --global-batch 1");
    CHECK(r.code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(r.err.find(path) != std::string::npos);
  }
}

TEST_CASE("a failed --out leaves no file behind") {
  const Result r = run("predict --out /nonexistent-dir/plan.json");
  CHECK(r.code == 2);
  CHECK_FALSE(std::filesystem::exists("/nonexistent-dir/plan.json"));
}

TEST_CASE("validate --json reports every row, the error summary, groups, sweeps and unsupported rows") {
  const Result r = run(std::string("validate --json --group-by gpu --runs ") + PARALLAX_SOURCE_DIR +
                       "/validation/runs");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rows"].size() >= 21);
  CHECK(j.contains("mean_abs_error_pct"));
  CHECK(j.contains("max_abs_error_pct"));
  CHECK(j["rows"][0].contains("error_pct"));
  CHECK(j["group_by"] == "gpu");
  CHECK(j["groups"].contains("a100-80gb"));
  CHECK(j["groups"].contains("h100-sxm"));
  CHECK_FALSE(j["sweeps"].empty());
  // Context-parallel rows are listed, not predicted (the cost model has no cp yet).
  bool cp = false;
  for (const auto& u : j["unsupported"]) {
    cp = cp || u["reason"].get<std::string>().find("context parallelism") != std::string::npos;
  }
  CHECK(cp);
}

TEST_CASE("validate --cross-validate source predicts each source by a fit without it") {
  const std::string dir = std::string(PARALLAX_SOURCE_DIR) + "/validation/runs/";
  const Result r = run("validate --cross-validate source --json --runs " + dir + "narayanan2021.json " +
                       dir + "mtnlg2022.json " + dir + "megatron2019.json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["cross_validate"] == "source");
  CHECK(j["rows"].size() == 19);  // megatron2019 is the only V100 source: nothing to fit it on
  CHECK(j["unsupported"].size() == 2);
  CHECK(j["groups"].contains("narayanan2021"));
  CHECK(j["groups"].contains("mtnlg2022"));
  CHECK(j["folds"].size() == 3);
}

TEST_CASE("fit --exclude-source fits on the other sources and records the rows it used") {
  const std::string dir = std::string(PARALLAX_SOURCE_DIR) + "/validation/runs/";
  const auto out = std::filesystem::temp_directory_path() /
                   ("parallax_test_fit_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(out);
  const Result r = run("fit --profile a100-megatron --date 2026-01-02 --exclude-source narayanan2021 --runs " +
                       dir + "narayanan2021.json " + dir + "mtnlg2022.json --out " + out.string());
  REQUIRE(r.code == 0);
  const auto p = nlohmann::json::parse(std::ifstream(out));
  const auto used = p["provenance"]["source_runs"];
  REQUIRE(used.size() == 3);
  for (const auto& id : used) CHECK(id.get<std::string>().rfind("mtnlg2022-", 0) == 0);
  CHECK(p["provenance"]["date"] == "2026-01-02");
  CHECK(p["provenance"]["tool"] == "parallax fit");
}

TEST_CASE("the stack defaults to the profile's own: gpt-tiny on cpu-local predicts as the executor") {
  const Result r = run("predict --model gpt-tiny --cluster cpu-local --gpus 2 --tp 1 --pp 1 "
                       "--dtype fp32 --global-batch 4");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("framework parallax-executor") != std::string::npos);
  const Result g = run("predict --model gpt-tiny --cluster dgx-a100-superpod --gpus 2 --tp 1 --pp 1 "
                       "--global-batch 4 --stack llm-foundry");
  REQUIRE(g.code == 0);
  CHECK(g.out.find("framework llm-foundry (fused attention)") != std::string::npos);
  // TorchTitan trains Llama-shaped models only: its table has rotary positions alone.
  const Result t = run("predict --model gpt-tiny --cluster dgx-a100-superpod --gpus 2 --tp 1 --pp 1 "
                       "--global-batch 4 --stack torchtitan");
  CHECK(t.code == 2);
  CHECK(t.err.find("$.model.position: stack \"torchtitan\" has no learned position embedding") !=
        std::string::npos);
}

TEST_CASE("every stack preset runs on every GPU profile: DeepSpeed and PyTorch FSDP on H100") {
  // A stack without corpus rows keeps the prior scale 1 rather than being refused.
  for (const char* stack : {"deepspeed", "pytorch-fsdp"}) {
    const Result r = run(std::string("predict --model llama2-7b --cluster dgx-h100-superpod --gpus 64 "
                                     "--tp 1 --pp 1 --global-batch 256 --zero 3 --stack ") + stack);
    REQUIRE(r.code == 0);
    CHECK(r.out.find(std::string("framework ") + stack) != std::string::npos);
  }
  // DeepSpeed's pipeline engine still refuses ZeRO-3 inside a pipeline; TorchTitan runs it.
  const Result ds = run("predict --model llama2-7b --cluster dgx-h100-superpod --gpus 64 --tp 1 "
                        "--pp 2 --global-batch 256 --zero 3 --stack deepspeed");
  CHECK(ds.code == 2);
  CHECK(ds.err.find("ZeRO-2/3 not supported with pp > 1") != std::string::npos);
  const Result tt = run("predict --model llama2-7b --cluster dgx-h100-superpod --gpus 64 --tp 1 "
                        "--pp 2 --global-batch 256 --zero 3 --stack torchtitan");
  REQUIRE(tt.code == 0);
  CHECK(tt.out.find("ZeRO-3 run as ZeRO-1") != std::string::npos);
}

TEST_CASE("another model without plan flags takes the whole cluster, tp 1, pp 1, one micro-batch per rank") {
  // Issue 23: `predict --model gpt-tiny --cluster cpu-local` failed on MT-NLG's 2240 GPUs.
  const Result r = run("predict --model gpt-tiny --cluster cpu-local");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("2 of 2 cpu-core GPUs") != std::string::npos);
  CHECK(r.out.find("global batch 2,") != std::string::npos);  // mbs 1 * dp 2
  CHECK(r.out.find("tp=1 pp=1 dp=2 mbs=1 m=1") != std::string::npos);
  // Flags that are given stay: mbs 2 * dp 1 with tp 2.
  const Result t = run("predict --model gpt-tiny --cluster cpu-local --tp 2 --mbs 2");
  REQUIRE(t.code == 0);
  CHECK(t.out.find("global batch 2,") != std::string::npos);
  CHECK(t.out.find("tp=2 pp=1 dp=1 mbs=2 m=1") != std::string::npos);
  // The default model keeps its published plan.
  const Result d = run("predict --model mt-nlg-530b");
  REQUIRE(d.code == 0);
  CHECK(d.out.find("tp=8 pp=35 dp=8 mbs=1 m=240") != std::string::npos);
}

TEST_CASE("the nodes flag asks about a preset cluster at another size") {
  const Result r = run("predict --model gpt3-175b --cluster dgx-h100-superpod --nodes 768 --gpus 6144 "
                       "--tp 8 --pp 8 --global-batch 1536");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("6144 of 6144 h100-sxm GPUs") != std::string::npos);
  // The preset alone stops at 127 nodes (1016 GPUs).
  const Result p = run("predict --model gpt3-175b --cluster dgx-h100-superpod --gpus 6144 --tp 8 --pp 8 "
                       "--global-batch 1536");
  CHECK(p.code == 2);
}

TEST_CASE("uneven pipeline stages from the command line: 105 layers as 27, 26, 26, 26") {
  // MT-NLG's 105 layers on pp 4: the first stage takes 27, the last 26, the two between split
  // the other 52 evenly.
  const Result r = run("predict --pp 4 --gpus 1024 --first-stage-layers 27 --last-stage-layers 26");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("first=27") != std::string::npos);
  CHECK(r.out.find("last=26") != std::string::npos);
}

TEST_CASE("the attention kernel from the command line: FlashAttention-3 beats FlashAttention-2 on H100") {
  // The FA3 paper's Fig. 5 and 6 put FlashAttention-3 above FlashAttention-2 at every length on
  // H100, so naming it can only shorten a fused-attention job's iteration.
  const std::string job = "predict --model llama2-7b --cluster dgx-h100-superpod --gpus 8 --tp 1 --pp 1 "
                          "--global-batch 8 --zero 1 --stack megatron-core --json";
  const Result fa2 = run(job + " --attention-kernel flash-attention-2");
  const Result fa3 = run(job + " --attention-kernel flash-attention-3");
  REQUIRE(fa2.code == 0);
  REQUIRE(fa3.code == 0);
  const double t2 = nlohmann::json::parse(fa2.out)["iteration_time_s"].get<double>();
  const double t3 = nlohmann::json::parse(fa3.out)["iteration_time_s"].get<double>();
  CHECK(t3 < t2);
  // Presets of the kind are listed and shown.
  const Result l = run("presets list");
  CHECK(l.out.find("flash-attention-3") != std::string::npos);
  CHECK(run("presets show cudnn").code == 0);
}

TEST_CASE("presets list and show") {
  const Result l = run("presets list");
  REQUIRE(l.code == 0);
  CHECK(l.out.find("mt-nlg-530b") != std::string::npos);
  CHECK(l.out.find("dgx-a100-superpod") != std::string::npos);
  const Result s = run("presets show a100-80gb");
  REQUIRE(s.code == 0);
  CHECK(nlohmann::json::parse(s.out)["peak_flops_per_s"]["bf16"].get<double>() == 312e12);
  // A Llama 3.1 model shows its RoPE base and scaling.
  const Result m = run("presets show models/llama3.1-405b");
  REQUIRE(m.code == 0);
  const auto llama = nlohmann::json::parse(m.out);
  CHECK(llama["rope_base"].get<double>() == 500000);
  CHECK(llama["rope_scaling"]["factor"].get<double>() == 8);
  CHECK(llama["rope_scaling"]["original_max_position"].get<int64_t>() == 8192);
}

TEST_CASE("plan --json: plans best first with predict's fields, counts and search time") {
  const Result r = run("plan --json --top 5");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["plans"].size() == 5);
  for (const char* k : {"plans_evaluated", "plans_rejected", "search_time_s"}) CHECK(j.contains(k));
  CHECK(j["plans_rejected"].contains("fits-in-memory"));
  double prev = 0;
  for (const auto& p : j["plans"]) {
    CHECK(p.contains("iteration_time_s"));
    CHECK(p.contains("mfu"));
    CHECK(p["memory"].contains("per_stage"));
    CHECK(p["plan"]["tp"].get<int>() * p["plan"]["pp"].get<int>() * p["plan"]["dp"].get<int>() ==
          2240);
    CHECK(p["ranking_time_s"].get<double>() >= prev);
    prev = p["ranking_time_s"].get<double>();
  }
}

TEST_CASE("plan --out writes the winner as a plan file") {
  const auto path = (std::filesystem::temp_directory_path() /
                     ("parallax_plan_out_" + std::to_string(getpid()) + ".json"))
                        .string();
  const Result r = run("plan --json --top 1 --out " + path);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const parallax::PlanFile f = parallax::read_plan_file(parallax::read_json_file(path), path);
  CHECK(f.plan.tp == j["plans"][0]["plan"]["tp"].get<int64_t>());
  CHECK(f.plan.micro_batch == j["plans"][0]["plan"]["micro_batch"].get<int64_t>());
  CHECK(f.gpus == 2240);
  std::filesystem::remove(path);
}

TEST_CASE("plan --force-tp/--force-pp: only plans of those sizes") {
  const Result r = run("plan --json --top 100 --force-tp 4 --force-pp 35");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(!j["plans"].empty());
  for (const auto& p : j["plans"]) {
    CHECK(p["plan"]["tp"].get<int>() == 4);
    CHECK(p["plan"]["pp"].get<int>() == 35);
  }
  expect_bad_input("plan --force-tp 0", "--force-tp: must be an integer in [1, ");
  expect_bad_input("plan --force-pp x", "--force-pp: must be an integer in [1, ");
  expect_bad_input("plan --force-tp 3", "left to consider under the search restrictions");
}

TEST_CASE("impossible plan requests end with one line and exit 2") {
  struct Case {
    const char* args;
    const char* expect;
  };
  const Case cases[] = {
      {"plan --gpus 10000", "has 4480 GPUs"},
      {"plan --global-batch 7", "passes the rules"},
      {"plan --model gpt-1t --gpus 8 --global-batch 8", "closest"},
      {"plan --recompute-allowed sometimes", "--recompute-allowed"},
      {"capacity --model gpt3-175b", "--tokens"},
      {"capacity --tokens 1e9 --gpus-range 8:x:8", "--gpus-range"},
  };
  for (const Case& c : cases) expect_bad_input(c.args, c.expect);
}

TEST_CASE("capacity --json: one row per GPU count with days, GPU-hours and cost") {
  const Result r =
      run("capacity --json --model gpt3-175b --tokens 300e9 --gpus 512,1024 --price 2");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 2);
  for (const auto& row : j["rows"]) {
    const double days = row["days"].get<double>();
    CHECK(row["gpu_hours"].get<double>() == Approx(days * 24 * row["gpus"].get<double>()));
    CHECK(row["cost_usd"].get<double>() == Approx(2 * row["gpu_hours"].get<double>()));
  }
  // Without a price the cost is unknown (null), not free.
  const Result n = run("capacity --json --model gpt3-175b --tokens 300e9 --gpus 512");
  REQUIRE(n.code == 0);
  CHECK(nlohmann::json::parse(n.out)["rows"][0]["cost_usd"].is_null());
}

// GB200 NVL72: 72 GPUs per rack, 4 per host (18 hosts). 256 GPUs are 64 hosts: not whole racks,
// so SLURM takes them in segments of the largest divisor of 64 under 18, 16 hosts (Megatron-
// Bridge's performance scripts' rule); 576 GPUs are all 8 racks, whole.
TEST_CASE("capacity names the cluster each GPU count is planned on, NVLink racks in segments or whole") {
  const std::string args = "capacity --model llama3-8b --cluster gb200-nvl72 --tokens 1e12 --gpus 256,576";
  const Result r = run(args + " --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["cluster"] == "gb200-nvl72 in segments of 16 hosts");
  CHECK(j["rows"][1]["cluster"] == "gb200-nvl72");
  const Result t = run(args);
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("256 GPUs: planned on gb200-nvl72 in segments of 16 hosts"));
  CHECK_THAT(t.out, !Catch::Contains("576 GPUs: planned on"));
}

// A report for 256 GB200 GPUs plans them in segments of 16 hosts; its scaling curve's other counts
// are allocated from the whole racks, as capacity allocates them: 288 GPUs (72 hosts) and 576 (144)
// take whole racks, not segments of the 256-GPU job's 64-GPU nodes.
TEST_CASE("a report's scaling curve allocates each GPU count from the whole racks, not the job's segments") {
  const Result r = run("report --format json --model llama3-8b --cluster gb200-nvl72 --gpus 256 --tokens 1e12 "
                       "--top 1 --scaling-gpus 256,288,576");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["scaling"].size() == 3);
  CHECK(j["scaling"][0]["cluster"] == "gb200-nvl72 in segments of 16 hosts");
  CHECK(j["scaling"][1]["cluster"] == "gb200-nvl72");
  CHECK(j["scaling"][2]["cluster"] == "gb200-nvl72");
}

TEST_CASE("report --format json shows the same plans and times as plan --json") {
  const std::string inputs = "--model gpt3-175b --gpus 512 --global-batch 1536 --tokens 300e9";
  const Result plan = run("plan --json --top 5 " + inputs);
  const Result report = run("report --format json --top 5 --scaling-gpus 256,512 " + inputs);
  REQUIRE(plan.code == 0);
  REQUIRE(report.code == 0);
  const auto p = nlohmann::json::parse(plan.out);
  const auto r = nlohmann::json::parse(report.out);
  REQUIRE(r["plans"].size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(r["plans"][i]["plan"] == p["plans"][i]["plan"]);
    CHECK(r["plans"][i]["ranking_time_s"].get<double>() ==
          Approx(p["plans"][i]["ranking_time_s"].get<double>()).epsilon(1e-12));
    CHECK(r["plans"][i]["mfu"].get<double>() == Approx(p["plans"][i]["mfu"].get<double>()));
  }
}
