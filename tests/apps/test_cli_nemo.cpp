// `parallax predict --from-recipe` on a NeMo 1.x training config: tests/data/nemo-gpt3-5b.yaml and
// nemo-llama2-70b.yaml, written in the format of the NeMo-Framework-Launcher's
// launcher_scripts/conf/training/gpt3/5b.yaml and llama/llama2_70b.yaml (NVIDIA/
// NeMo-Framework-Launcher). The references: the configs' own values, and the prediction the same
// setting gets from the flags.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"

namespace {

using Result = parallax::test::CliResult;
Result run(const std::string& args) { return parallax::test::run_cli(args); }

std::string sample(const std::string& name) { return std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("parallax_nemo_" + std::to_string(getpid()) + "_" + name)).string();
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The sample with `from` replaced by `to`, as a temporary file.
std::string edited(const std::string& name, const std::string& from, const std::string& to) {
  std::ifstream in(sample(name));
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  const size_t at = t.find(from);
  REQUIRE(at != std::string::npos);
  return temp_file("edited_" + name, t.replace(at, from.size(), to));
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string line_with(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return "absent";
  return text.substr(at, text.find('\n', at) - at);
}

// Bad input: exit 2 and one line naming `where`.
void refused(const Result& r, const std::string& where) {
  CHECK(r.code == 2);
  CHECK(r.err.find(where) != std::string::npos);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  INFO(r.err);
}

}  // namespace

TEST_CASE("predict evaluates a NeMo GPT-3 5B config as the same flags would") {
  const std::string plan = temp_path("gpt3_5b_plan.json");
  const Result r = run("predict --from-recipe " + sample("nemo-gpt3-5b.yaml") + " --cluster dgx-a100-superpod --out " + plan);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(line_with(r.out, "plan ").find("tp=1 pp=1 dp=128 mbs=4 m=4 schedule=1f1b recompute=none zero=1") !=
        std::string::npos);
  // trainer.num_nodes x devices: the cluster at 16 nodes, all 128 GPUs; the stack NeMo 1.
  const nlohmann::json f = read_json(plan);
  CHECK(f["cluster"]["nodes"] == 16);
  CHECK(f["gpus"] == 16 * 8);
  CHECK(f["job"]["framework"] == "nemo-1");
  CHECK(f["model"]["name"] == "gpt3_5b");
  CHECK(f["model"]["ffn_hidden"] == 4 * 4096);
  // The same setting through the flags: the config's shape, GPT-2's vocabulary, NeMo's
  // defaults (gelu, learned positions, layernorm, tied embeddings, dropout 0.1).
  const std::string model = temp_file(
      "gpt3_5b.json", R"({"name": "gpt3_5b", "layers": 24, "hidden": 4096, "heads": 32, "seq_len": 2048,
                          "vocab": 50257, "ffn_hidden": 16384, "dropout": 0.1})");
  const Result g = run("predict --model " + model + " --cluster dgx-a100-superpod --nodes 16 --gpus 128 "
                       "--global-batch 2048 --tp 1 --pp 1 --mbs 4 --recompute none --zero 1 --stack nemo-1 "
                       "--dtype bf16 --tokens " + std::to_string(75000LL * 2048 * 2048));
  REQUIRE(g.code == 0);
  CHECK(line_with(r.out, "iteration time") == line_with(g.out, "iteration time"));
  CHECK(line_with(r.out, "plan ") == line_with(g.out, "plan "));
  // --stack and --tokens still apply.
  const Result s = run("predict --from-recipe " + sample("nemo-gpt3-5b.yaml") +
                       " --cluster dgx-a100-superpod --stack megatron-core --tokens 1e9 --json");
  REQUIRE(s.code == 0);
  CHECK(nlohmann::json::parse(s.out)["profile"].is_string());
}

TEST_CASE("predict evaluates a NeMo Llama 2 70B config: GQA, SwiGLU, RoPE, interleaved 1F1B") {
  const std::string plan = temp_path("llama2_70b_plan.json");
  const Result r = run("predict --from-recipe " + sample("nemo-llama2-70b.yaml") + " --cluster dgx-h100-superpod --out " + plan);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(line_with(r.out, "plan ").find("tp=4 pp=4 dp=64 vpp=20 mbs=1 m=32 schedule=interleaved recompute=none sp zero=1") !=
        std::string::npos);
  const nlohmann::json f = read_json(plan);
  CHECK(f["cluster"]["nodes"] == 128);  // the preset's 127 nodes, grown to the run's
  CHECK(f["gpus"] == 1024);
  const std::string model = temp_file(
      "llama2_70b.json", R"({"name": "llama2_70b", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
                             "seq_len": 4096, "vocab": 32000, "ffn_hidden": 28672, "activation": "swiglu",
                             "position": "rope", "norm": "rmsnorm", "tied_embeddings": false,
                             "linear_bias": false, "dropout": 0})");
  const Result g = run("predict --model " + model + " --cluster dgx-h100-superpod --nodes 128 --gpus 1024 "
                       "--global-batch 2048 --tp 4 --pp 4 --vpp 20 --mbs 1 --sp --recompute none --zero 1 "
                       "--stack nemo-1 --dtype bf16 --tokens " + std::to_string(300000LL * 2048 * 4096));
  REQUIRE(g.code == 0);
  CHECK(line_with(r.out, "iteration time") == line_with(g.out, "iteration time"));
  CHECK(line_with(r.out, "peak") == line_with(g.out, "peak"));
}

TEST_CASE("a NeMo config's bad values get exit 2 and one line naming the key") {
  const std::string five = "nemo-gpt3-5b.yaml";
  const std::string on_a100 = " --cluster dgx-a100-superpod";
  auto predict = [&](const std::string& path) { return run("predict --from-recipe " + path + on_a100); };
  refused(predict(edited(five, "precision: bf16", "precision: fp7")),
          "$.trainer.precision: must be 16, 16-mixed, bf16, bf16-mixed or 32 (got \"fp7\")");
  refused(predict(edited(five, "context_parallel_size: 1", "context_parallel_size: 3")),
          "$.model.context_parallel_size: tp (1) x cp (3) x pp (1) must divide the GPU count (128, --gpus)");
  refused(predict(edited(five, "  num_layers: 24\n", "")), "$.model.num_layers: is needed");
  refused(predict(edited(five, "num_layers: 24", "num_layers: ${oc.env:LAYERS}")),
          "$.model.num_layers: cannot resolve ${oc.env:LAYERS}");
  refused(predict(edited(five, "num_nodes: 16", "num_nodes: 15")),
          "$.model.global_batch_size: must be a multiple of micro_batch_size x data-parallel size, 4 x 120");
  refused(predict(edited(five, "pipeline_model_parallel_size: 1", "pipeline_model_parallel_size: 3")),
          "$.model.tensor_model_parallel_size: tp (1) x pp (3) must divide the GPUs");
  refused(predict(edited(five, "devices: 8", "devices: 16")),
          "$.trainer.devices: must be at most the GPUs of a node of cluster dgx-a100-superpod (8) (got 16)");
  // What the command line adds: the cluster is needed; what the config gives is not typed again.
  refused(run("predict --from-recipe " + sample(five)), "command line: --cluster: is needed with a NeMo config");
  refused(run("predict --from-recipe " + sample(five) + on_a100 + " --tp 2"),
          "command line: --tp: cannot be combined with a NeMo config");
  refused(run("predict --from-recipe " + sample(five) + on_a100 + " --global-batch 1024"),
          "command line: --global-batch: cannot be combined with a NeMo config");
}
