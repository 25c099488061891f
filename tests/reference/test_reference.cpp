// The single-process executor against the independent PyTorch reference (gpt_reference.py and
// llama_reference.py, run in float64): from the same weights and tokens, the loss, the logits and
// every gradient tensor by name.
// Tolerances: fp32 against fp64, relative to each tensor's largest magnitude.
#include <catch2/catch.hpp>

#include <cmath>

#include "../executor/mpi_run.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

using namespace parallax::test;

namespace {

std::string golden_dir(const std::string& golden_name) {
  return std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/" + golden_name;
}

// A one-rank plan of model `model_json` in tests/reference (global batch 4 of micro-batches of 1).
std::string reference_plan(const std::string& dir, const std::string& model_json) {
  const std::string plan = dir + "/plan.json";
  REQUIRE(shell(std::string(PARALLAX_BIN) + " predict --model " + PARALLAX_SOURCE_DIR +
                "/tests/reference/" + model_json +
                " --cluster dgx-a100-superpod --dtype fp32"
                " --gpus 1 --tp 1 --pp 1 --global-batch 4 --mbs 1 --recompute none --out " +
                plan + " > /dev/null") == 0);
  return plan;
}

// Resumes the single-process executor of `plan` from `golden`/ckpt, runs `steps` steps on
// `golden`/tokens.bin and compares the first with `golden`/golden.safetensors (and, when its
// metadata has "losses", every step's loss).
void check_against_reference(const std::string& golden_name, const std::string& dir,
                             const std::string& plan, int steps = 1) {
  const std::string golden = golden_dir(golden_name);
  // Resume from a copy: the run saves nothing, but keep the committed files untouched anyway.
  std::filesystem::copy(golden + "/ckpt", dir + "/ckpt", std::filesystem::copy_options::recursive);
  const int rc = mpirun(1,
                        "--plan " + plan + " --steps " + std::to_string(steps) +
                            " --resume --checkpoint-dir " + dir + "/ckpt --data " + golden +
                            "/tokens.bin --out " + dir + "/m.json --dump-grads " + dir + "/grads",
                        dir + "/run.log");
  INFO(slurp(dir + "/run.log"));
  REQUIRE(rc == 0);

  const auto ref = parallax::exec::read_shard_file(golden + "/golden.safetensors");
  const auto grads = parallax::exec::read_global_tensors(dir + "/grads");
  const std::vector<double> got_losses = losses(dir + "/m.json");
  const double loss = got_losses.at(0);
  if (const auto it = ref.metadata.find("losses"); it != ref.metadata.end()) {
    const auto want = nlohmann::json::parse(it->second).get<std::vector<double>>();
    REQUIRE(got_losses.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("step " << i + 1 << ": " << got_losses[i] << " against the reference's " << want[i]);
      CHECK(std::abs(got_losses[i] - want[i]) <= 1e-5 * std::abs(want[i]));
    }
  }
  size_t compared = 0;
  for (const auto& e : ref.tensors) {
    if (e.shard.name == "loss") {
      CHECK(loss == Approx(e.data[0]).epsilon(1e-6));
      continue;
    }
    if (e.shard.name == "logits") {  // golden (B, T, V) against ours (B*T, V padded)
      REQUIRE(grads.count("logits") == 1);
      const auto& got = grads.at("logits");
      const int64_t V = e.shard.local_shape[2];
      const int64_t Vp = got.shape[1];
      REQUIRE(got.shape[0] * V == static_cast<int64_t>(e.data.size()) / 1);
      double max_ref = 0, max_err = 0;
      for (int64_t i = 0; i < got.shape[0]; ++i)
        for (int64_t j = 0; j < V; ++j) {
          const float r = e.data[static_cast<size_t>(i * V + j)];
          max_ref = std::max(max_ref, static_cast<double>(std::abs(r)));
          max_err = std::max(max_err, static_cast<double>(std::abs(got.data[static_cast<size_t>(i * Vp + j)] - r)));
        }
      INFO("logits: max abs difference " << max_err << ", max |reference| " << max_ref);
      CHECK(max_err <= 1e-5 * max_ref);
      ++compared;
      continue;
    }
    if (e.shard.name.rfind("grad.", 0) != 0) continue;
    const std::string name = e.shard.name.substr(5);
    INFO("gradient " << name);
    REQUIRE(grads.count(name) == 1);
    const auto& g = grads.at(name);
    REQUIRE(g.data.size() == e.data.size());
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < e.data.size(); ++i) {
      max_ref = std::max(max_ref, static_cast<double>(std::abs(e.data[i])));
      max_err = std::max(max_err, static_cast<double>(std::abs(g.data[i] - e.data[i])));
    }
    INFO("max abs difference " << max_err << ", max |reference| " << max_ref);
    CHECK(max_err <= 1e-5 * max_ref);
    ++compared;
  }
  CHECK(compared == grads.size());
}

}  // namespace

TEST_CASE("single process equals the PyTorch reference", "[executor][mpi][reference]") {
  const std::string dir = scratch_dir("reference_golden");
  check_against_reference("golden", dir, reference_plan(dir, "micro_model.json"));
}

// llama_model.json: grouped-query attention (2 query heads per KV head), RoPE at base 500000 with
// Llama 3.1's scaling, SwiGLU, RMSNorm, untied embeddings, no biases; the checkpoint under Hugging
// Face Llama names (q/k/v and gate/up stored apart), the golden gradients under the executor's.
TEST_CASE("single process equals the PyTorch Llama reference", "[executor][mpi][reference]") {
  const std::string dir = scratch_dir("reference_golden_llama");
  check_against_reference("golden_llama", dir, reference_plan(dir, "llama_model.json"));
}

// llama_head_dim_model.json: heads 24 wide on hidden 64 (Hugging Face head_dim, Megatron-LM
// --kv-channels), so q, k, v and the output projection's input are not hidden wide.
TEST_CASE("single process equals the PyTorch Llama reference with decoupled head_dim",
          "[executor][mpi][reference]") {
  const std::string dir = scratch_dir("reference_golden_llama_head_dim");
  check_against_reference("golden_llama_head_dim", dir, reference_plan(dir, "llama_head_dim_model.json"));
}

// Mixtures of experts (moe_reference.py): the moe-tiny preset (softmax top-2 of 8 experts, one
// shared expert, every layer MoE) and moe_sigmoid_model.json (sigmoid top-3, two shared experts, a
// leading dense layer); loss (cross-entropy + the load-balancing loss), logits and every gradient
// of the first step, and the losses of five steps of AdamW.
TEST_CASE("single process equals the PyTorch mixture-of-experts references",
          "[executor][mpi][reference][moe]") {
  for (const auto& [golden, model] :
       {std::pair<std::string, std::string>{
            "golden_moe", std::string(PARALLAX_SOURCE_DIR) + "/presets/models/moe-tiny.json"},
        {"golden_moe_sigmoid",
         std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/moe_sigmoid_model.json"}}) {
    INFO(golden);
    const std::string dir = scratch_dir("reference_" + golden);
    check_against_reference(golden, dir, make_moe_plan(dir, "plan", 1, 1, 1, "", model), 5);
  }
}
