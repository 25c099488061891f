// The embedded presets: every one loads through the strict readers and says where its numbers
// come from, and the names docs/design.md section 3 promises exist.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core_test_util.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::test {
namespace {

bool has_preset(const std::string& kind, const std::string& name) {
  const std::vector<std::string> names = preset_names(kind);
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("presets: every model, gpu and cluster preset loads and has a source",
          "[core][presets]") {
  for (const std::string& name : preset_names("models")) {
    INFO("model preset " << name);
    const ModelSpec m = load_model(name);
    CHECK_FALSE(m.source.empty());
    CHECK(m.name == name);
  }
  for (const std::string& name : preset_names("gpus")) {
    INFO("gpu preset " << name);
    const GpuSpec g = load_gpu(name);
    CHECK_FALSE(g.source.empty());
    CHECK(g.name == name);
  }
  for (const std::string& name : preset_names("clusters")) {
    INFO("cluster preset " << name);
    const ClusterSpec c = load_cluster(name);
    CHECK_FALSE(c.source.empty());
    CHECK_FALSE(c.gpu.source.empty());
    CHECK(c.name == name);
  }
}

TEST_CASE("presets: the names of docs/design.md section 3 exist", "[core][presets]") {
  for (const char* name :
       {"gpt2-124m", "megatron-8.3b", "gpt3-175b", "mt-nlg-530b", "bloom-176b", "gpt-1t"})
    CHECK(has_preset("models", name));
  for (const char* name : {"v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h200"})
    CHECK(has_preset("gpus", name));
  for (const char* name : {"dgx-a100-superpod", "azure-ndv4", "dgx-h100-superpod", "v100-dgx2h"})
    CHECK(has_preset("clusters", name));
}

TEST_CASE("presets: the Llama-family models of issue 26 and their RoPE", "[core][presets]") {
  for (const char* name : {"llama3-8b", "llama3-70b", "llama3-405b"}) {
    INFO(name);
    const ModelSpec m = load_model(name);
    CHECK(m.seq_len == 8192);  // Llama 3's pre-training context
    CHECK(m.rope_base == 500000);
    CHECK_FALSE(m.has_rope_scaling());
    CHECK(m.vocab == 128256);
    CHECK(m.kv_heads == 8);
  }
  // Llama 3.1 is Llama 3's shape with the context extended to 128K and the RoPE scaled.
  const std::pair<const char*, const char*> extended[] = {{"llama3.1-8b", "llama3-8b"},
                                                          {"llama3.1-70b", "llama3-70b"},
                                                          {"llama3.1-405b", "llama3-405b"}};
  for (const auto& [name, at_8k] : extended) {
    INFO(name);
    const ModelSpec m = load_model(name);
    const ModelSpec base = load_model(at_8k);
    CHECK(m.seq_len == 131072);
    CHECK(m.rope_base == 500000);
    CHECK(m.rope_scaling == RopeScaling{8, 1, 4, 8192});
    CHECK(m.layers == base.layers);
    CHECK(m.hidden == base.hidden);
    CHECK(m.heads == base.heads);
    CHECK(m.kv_heads == base.kv_heads);
    CHECK(m.ffn_hidden == base.ffn_hidden);
    CHECK(m.vocab == base.vocab);
  }
  for (const char* name : {"llama2-7b", "llama2-13b", "llama2-70b", "mistral-7b", "llama-tiny"}) {
    INFO(name);
    const ModelSpec m = load_model(name);
    CHECK(m.rope_base == 10000);
    CHECK_FALSE(m.has_rope_scaling());
  }
  for (const char* name :
       {"llama3-8b", "llama3.1-405b", "llama2-13b", "mistral-7b", "llama-tiny"}) {
    INFO(name);
    const ModelSpec m = load_model(name);
    CHECK(m.position == Position::rope);
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.norm == Norm::rmsnorm);
    CHECK_FALSE(m.tied_embeddings);
    CHECK_FALSE(m.linear_bias);
    CHECK_FALSE(m.has_dropout());
  }
  // Mistral 7B's sliding window has no field: the source must say it is not modelled.
  CHECK_THAT(load_model("mistral-7b").source,
             Catch::Contains("Sliding-window attention is NOT modelled"));
  const ModelSpec tiny = load_model("llama-tiny");
  CHECK(tiny.layers == 4);
  CHECK(tiny.hidden == 64);
  CHECK(tiny.heads == 4);
  CHECK(tiny.kv_heads == 2);
  CHECK(tiny.ffn_hidden == 128);
  CHECK(tiny.seq_len == 32);
  CHECK(tiny.vocab == 256);
}

TEST_CASE("presets: names are sorted", "[core][presets]") {
  for (const char* kind : {"models", "gpus", "clusters", "profiles"}) {
    const std::vector<std::string> names = preset_names(kind);
    CHECK(std::is_sorted(names.begin(), names.end()));
  }
  CHECK(preset_names("no-such-kind").empty());
}

TEST_CASE("presets: an unknown name lists the known ones", "[core][presets]") {
  try {
    (void)preset_json("models", "gpt-5");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.source() == "command line");
    CHECK_THAT(e.rule(), Catch::StartsWith("unknown models preset \"gpt-5\"; known: "));
    for (const std::string& name : preset_names("models"))
      CHECK_THAT(e.rule(), Catch::Contains(name));
  }
  CHECK_THROWS_AS(load_gpu("no-such-gpu"), InputError);
  CHECK_THROWS_AS(load_cluster("no-such-cluster"), InputError);
}

TEST_CASE("presets: a name with '/' or ending in .json is a file", "[core][presets]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("parallax_presets_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "mine.json").string();
  json m = base_model();
  m.erase("name");
  std::ofstream(path) << m.dump();
  const ModelSpec loaded = load_model(path);
  CHECK(loaded.layers == 96);
  CHECK(loaded.name == "custom");  // files, unlike presets, need neither name nor source

  m["layers"] = 0;
  std::ofstream(path) << m.dump();
  require_input_error([&] { (void)load_model(path); }, "$.layers", {path, ">= 1 (got 0)"});
  require_input_error([&] { (void)load_gpu("missing-gpu.json"); }, "$",
                      {"missing-gpu.json", "cannot read file"});
  fs::remove_all(dir);
}

}  // namespace parallax::test
