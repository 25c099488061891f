// Checkpoint names and layouts (executor/checkpoint_layout.hpp, issue 26) without an MPI run:
// shards written as save_checkpoint writes them, read back as resume and the export read them.
// Values are a formula of each element's place in the executor's global tensor, so every
// expected value below is computed from the layout's definition, not read from our own output.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/core/param_table.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/executor/checkpoint/checkpoint.hpp"
#include "parallax/executor/checkpoint/checkpoint_inspect.hpp"
#include "parallax/executor/checkpoint/checkpoint_layout.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

namespace {

using namespace parallax;
namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("parallax_ckpt_layout_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Element `flat` of the executor's global tensor `name`, offset per Adam state.
float value(const std::string& name, int64_t flat, float state) {
  return state + static_cast<float>(std::hash<std::string>{}(name) % 97) + 1e-3f * static_cast<float>(flat % 1000);
}

// One file per tp rank of a one-stage plan, parameters and Adam m as save_checkpoint stores them.
void write_plan_shards(const fs::path& dir, const ModelSpec& m, int64_t tp, bool llama) {
  PlanSpec p;
  p.tp = tp;
  for (int64_t r = 0; r < tp; ++r) {
    exec::ShardFile f;
    for (const auto& t : stage_param_table(m, p, 0, r)) {
      for (const auto& [prefix, state] : {std::pair{"", 0.0f}, {"optimizer.m.", 0.5f}}) {
        std::vector<float> data(static_cast<size_t>(t.numel()));
        for (int64_t i = 0; i < t.numel(); ++i) {
          const bool pad = t.valid_rows > 0 && global_row(t, i) >= t.valid_rows;
          data[static_cast<size_t>(i)] = pad ? 0.0f : value(t.name, global_flat_index(t, i), state);
        }
        for (auto& e : exec::stored_entries(t, prefix, data.data(), llama)) f.tensors.push_back(std::move(e));
      }
    }
    exec::write_shard_file((dir / ("model_tp" + std::to_string(r) + "_pp0.safetensors")).string(), f);
  }
}

ModelSpec llama_tiny() { return load_model("llama-tiny"); }

}  // namespace

TEST_CASE("a Llama-family model is one with rope, rmsnorm or swiglu") {
  ModelSpec m = load_model("gpt2-124m");
  CHECK_FALSE(exec::hf_llama_layout(m));
  CHECK(exec::hf_llama_layout(llama_tiny()));
  m.norm = Norm::rmsnorm;
  CHECK(exec::hf_llama_layout(m));
}

TEST_CASE("a tp=2 Llama checkpoint stores HF Llama names, q/k/v and gate/up apart, (out, in)") {
  const ModelSpec m = llama_tiny();  // C 64, heads 4 (hd 16), kv_heads 2, F 128, vocab 256
  const fs::path dir = scratch("llama_tp2");
  write_plan_shards(dir, m, 2, true);
  const auto stored = exec::read_stored_tensors(dir.string());
  const int64_t C = 64;
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"model.embed_tokens.weight", {256, C}},
      {"model.layers.2.input_layernorm.weight", {C}},
      {"model.layers.2.self_attn.q_proj.weight", {4 * 16, C}},
      {"model.layers.2.self_attn.k_proj.weight", {2 * 16, C}},
      {"model.layers.2.self_attn.v_proj.weight", {2 * 16, C}},
      {"model.layers.2.self_attn.o_proj.weight", {C, 4 * 16}},
      {"model.layers.2.post_attention_layernorm.weight", {C}},
      {"model.layers.2.mlp.gate_proj.weight", {128, C}},
      {"model.layers.2.mlp.up_proj.weight", {128, C}},
      {"model.layers.2.mlp.down_proj.weight", {C, 128}},
      {"model.norm.weight", {C}},
      {"lm_head.weight", {256, C}}};
  for (const auto& [name, shape] : shapes) {
    INFO(name);
    REQUIRE(stored.count(name) == 1);
    CHECK(stored.at(name).shape == shape);
    CHECK(stored.count("optimizer.m." + name) == 1);
  }
  // 2 outer + 9 per layer x 4 + norm + lm_head, each with its Adam m.
  CHECK(stored.size() == 2 * (1 + 9 * 4 + 2));
  // The parts are rows of the fused executor tensors: q = rows [0, 64), k = [64, 96), v = [96, 128)
  // of c_attn; gate = rows [0, 128), up = [128, 256) of c_fc; all (out, in) like the executor's.
  const auto row_of = [&](const std::string& stored_name, int64_t first_row, const std::string& fused) {
    const auto& g = stored.at(stored_name);
    const int64_t cols = g.shape[1];
    for (int64_t r = 0; r < g.shape[0]; ++r)
      for (int64_t c = 0; c < cols; ++c)
        if (g.data[static_cast<size_t>(r * cols + c)] != value(fused, (first_row + r) * cols + c, 0.0f)) return false;
    return true;
  };
  CHECK(row_of("model.layers.2.self_attn.q_proj.weight", 0, "h.2.attn.c_attn.weight"));
  CHECK(row_of("model.layers.2.self_attn.k_proj.weight", 64, "h.2.attn.c_attn.weight"));
  CHECK(row_of("model.layers.2.self_attn.v_proj.weight", 96, "h.2.attn.c_attn.weight"));
  CHECK(row_of("model.layers.2.mlp.gate_proj.weight", 0, "h.2.mlp.c_fc.weight"));
  CHECK(row_of("model.layers.2.mlp.up_proj.weight", 128, "h.2.mlp.c_fc.weight"));
  CHECK(row_of("model.layers.2.mlp.down_proj.weight", 0, "h.2.mlp.c_proj.weight"));
  CHECK(row_of("model.embed_tokens.weight", 0, "wte.weight"));
}

TEST_CASE("a Llama checkpoint of tp=2 reads back under the executor's names and loads into tp=1, and back") {
  ModelSpec biased = llama_tiny();  // q, k, v, o, gate, up and down biases: split and joined like weights
  biased.linear_bias = true;
  for (const auto& [m, write_tp, read_tp] : {std::tuple{llama_tiny(), int64_t{2}, int64_t{1}}, {llama_tiny(), 1, 2},
                                             {biased, 2, 1}}) {
    INFO("written at tp " << write_tp << ", read at tp " << read_tp << (m.linear_bias ? ", with biases" : ""));
    const fs::path dir = scratch("llama_reshard");
    write_plan_shards(dir, m, write_tp, true);
    const auto all = exec::read_global_tensors(dir.string());
    PlanSpec p;
    p.tp = read_tp;
    size_t checked = 0;
    for (int64_t r = 0; r < read_tp; ++r)
      for (const auto& t : stage_param_table(m, p, 0, r))
        for (const auto& [prefix, state] : {std::pair{"", 0.0f}, {"optimizer.m.", 0.5f}}) {
          INFO(prefix << t.name);
          REQUIRE(all.count(prefix + t.name) == 1);
          CHECK(all.at(prefix + t.name).shape == t.global_shape);
          std::vector<float> local(static_cast<size_t>(t.numel()));
          exec::extract_shard(all.at(prefix + t.name), t, local.data());
          size_t wrong = 0;
          for (int64_t i = 0; i < t.numel(); ++i)
            wrong += local[static_cast<size_t>(i)] != value(t.name, global_flat_index(t, i), state);
          CHECK(wrong == 0);
          ++checked;
        }
    CHECK(checked == 2 * (3 + (m.linear_bias ? 10 : 6) * 4) * static_cast<size_t>(read_tp));
    // Prefixes select executor names, whatever the files call them.
    const auto opt = exec::read_global_tensors(dir.string(), "optimizer.m.h.1.");
    CHECK(opt.size() == (m.linear_bias ? 10 : 6));
    if (m.linear_bias) {
      const auto stored = exec::read_stored_tensors(dir.string());
      CHECK(stored.at("model.layers.1.self_attn.q_proj.bias").shape == std::vector<int64_t>{64});
      CHECK(stored.at("model.layers.1.self_attn.k_proj.bias").shape == std::vector<int64_t>{32});
      CHECK(stored.at("model.layers.1.self_attn.o_proj.bias").shape == std::vector<int64_t>{64});
      CHECK(stored.at("model.layers.1.mlp.up_proj.bias").shape == std::vector<int64_t>{128});
      CHECK(stored.at("model.layers.1.mlp.down_proj.bias").shape == std::vector<int64_t>{64});
    }
    CHECK(opt.count("optimizer.m.h.1.attn.c_attn.weight") == 1);
  }
}

TEST_CASE("GPT-2 checkpoints keep GPT-2 names and Conv1D (in, out) weights") {
  const ModelSpec m = load_model(std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/micro_model.json");
  PlanSpec p;
  p.tp = 2;
  const auto table = stage_param_table(m, p, 0, 1);
  for (const auto& t : table) {
    const std::vector<float> data(static_cast<size_t>(t.numel()), 1.0f);
    const auto entries = exec::stored_entries(t, "optimizer.v.", data.data(), false);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].shard.name == "optimizer.v." + t.name);
    if (exec::hf_conv1d_weight(t.name)) {
      CHECK(entries[0].shard.global_shape == std::vector<int64_t>{t.global_shape[1], t.global_shape[0]});
      CHECK(entries[0].shard.shard_dim == 1 - t.shard_dim);
    } else {
      CHECK(entries[0].shard.global_shape == t.global_shape);
    }
  }
}

TEST_CASE("a Llama checkpoint missing one part of a fused tensor is refused naming it") {
  const ModelSpec m = llama_tiny();
  const fs::path dir = scratch("llama_missing");
  write_plan_shards(dir, m, 1, true);
  const std::string path = (dir / "model_tp0_pp0.safetensors").string();
  exec::ShardFile f = exec::read_shard_file(path);
  std::erase_if(f.tensors, [](const exec::ShardEntry& e) { return e.shard.name == "model.layers.3.self_attn.v_proj.weight"; });
  exec::write_shard_file(path, f);
  try {
    (void)exec::read_global_tensors(dir.string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("model.layers.3.self_attn.v_proj.weight: tensor missing from the checkpoint") !=
          std::string::npos);
  }
}

TEST_CASE("parts that cannot be joined are refused naming the tensor and both shapes") {
  auto tensor = [](std::vector<int64_t> shape) {
    exec::GlobalTensor g;
    g.shape = shape;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    g.data.assign(static_cast<size_t>(n), 1.0f);
    g.filled.assign(static_cast<size_t>(n), true);
    return g;
  };
  const std::string p = "model.layers.0.self_attn.";
  auto refused = [](std::map<std::string, exec::GlobalTensor> stored, const std::string& words) {
    try {
      (void)exec::to_executor_layout(std::move(stored), "ck");
      FAIL("no error");
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  refused({{p + "q_proj.weight", tensor({4, 8})}, {p + "k_proj.weight", tensor({2, 7})}, {p + "v_proj.weight", tensor({2, 8})}},
          "k_proj.weight: shape [2, 7] cannot be joined with model.layers.0.self_attn.q_proj.weight's [4, 8]");
  refused({{p + "q_proj.weight", tensor({4, 8})}, {p + "k_proj.weight", tensor({2})}, {p + "v_proj.weight", tensor({2, 8})}},
          "cannot be joined");
  refused({{p + "q_proj.bias", tensor({})}, {p + "k_proj.bias", tensor({2})}, {p + "v_proj.bias", tensor({2})}},
          "cannot be joined");
  refused({{"h.0.attn.c_proj.weight", tensor({4})}}, "a Conv1D weight must have 2 dimensions");
  refused({{"optimizer.m.model.layers.2.mlp.gate_proj.weight", tensor({4, 8})}},
          "optimizer.m.model.layers.2.mlp.up_proj.weight: tensor missing from the checkpoint");
  // Joined as rows: q (4, 8) | k (2, 8) | v (2, 8) -> c_attn (8, 8); up_proj alone is a GeLU c_fc.
  const auto ok = exec::to_executor_layout(
      {{p + "q_proj.weight", tensor({4, 8})}, {p + "k_proj.weight", tensor({2, 8})}, {p + "v_proj.weight", tensor({2, 8})},
       {"model.layers.0.mlp.up_proj.weight", tensor({16, 8})}, {"logits", tensor({3, 5})}},
      "ck");
  CHECK(ok.at("h.0.attn.c_attn.weight").shape == std::vector<int64_t>{8, 8});
  CHECK(ok.at("h.0.mlp.c_fc.weight").shape == std::vector<int64_t>{16, 8});
  CHECK(ok.at("logits").shape == std::vector<int64_t>{3, 5});  // not a parameter: passed through
}

TEST_CASE("the PyTorch reference's Llama checkpoint (written by llama_reference.py) has exactly the model's tensors") {
  const std::string step = std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/golden_llama/ckpt/step_000000";
  const ModelSpec m = load_model(std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/llama_model.json");
  const auto stored = exec::read_stored_tensors(step);
  const auto all = exec::read_global_tensors(step);
  const auto table = stage_param_table(m, PlanSpec{}, 0, 0);
  REQUIRE(all.size() == table.size());
  for (const auto& t : table) {
    INFO(t.name);
    REQUIRE(all.count(t.name) == 1);
    CHECK(all.at(t.name).shape == t.global_shape);
  }
  // c_attn's rows are q_proj's, then k_proj's, then v_proj's, as Python split them.
  const auto& fused = all.at("h.1.attn.c_attn.weight").data;
  std::vector<float> parts;
  for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
    const auto& d = stored.at(std::string("model.layers.1.self_attn.") + n + ".weight").data;
    parts.insert(parts.end(), d.begin(), d.end());
  }
  CHECK(fused == parts);
  CHECK(all.at("wte.weight").data == stored.at("model.embed_tokens.weight").data);
  // `parallax checkpoint inspect` names the layout the shards record.
  const auto steps = exec::inspect_checkpoints(step);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].format.find("HF Llama names and (out, in) layout") != std::string::npos);
}
