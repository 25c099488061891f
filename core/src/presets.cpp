// The preset registry: embedded JSON looked up by kind and name, and the loaders that accept a
// preset name or a file path wherever a user names a model, GPU or cluster.
#include "parallax/core/presets.hpp"

#include <algorithm>

#include "parallax/core/attention_kernel_io.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {

using nlohmann::json;

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> names;
  for (const EmbeddedPreset& p : embedded_presets())
    if (kind == p.kind) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

json preset_json(const std::string& kind, const std::string& name) {
  for (const EmbeddedPreset& p : embedded_presets())
    if (kind == p.kind && name == p.name)
      return parse_json_text(p.text, "preset " + kind + "/" + name);
  std::string known;
  for (const std::string& n : preset_names(kind)) known += (known.empty() ? "" : ", ") + n;
  if (known.empty()) known = "(none)";
  throw InputError("command line", name,
                   "unknown " + kind + " preset " + json(name).dump() + "; known: " + known);
}

namespace {

bool is_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".json");
}

// Presets are the numbers users trust without checking, so each must say where they come from.
template <class Spec>
Spec load(const std::string& kind, const std::string& name_or_path,
          Spec (*read)(JsonObjectReader&)) {
  if (is_path(name_or_path)) {
    const json j = read_json_file(name_or_path);
    JsonObjectReader r(j, name_or_path);
    return read(r);
  }
  const json j = preset_json(kind, name_or_path);
  JsonObjectReader r(j, "preset " + kind + "/" + name_or_path);
  Spec spec = read(r);
  if (!r.has("source")) r.fail("source", "is required for a preset (where its numbers come from)");
  if (spec.source.empty())
    r.fail("source", "must not be empty for a preset (where its numbers come from)");
  if (!r.has("name")) spec.name = name_or_path;
  return spec;
}

}  // namespace

ModelSpec load_model(const std::string& name_or_path) {
  return load("models", name_or_path, &read_model);
}
GpuSpec load_gpu(const std::string& name_or_path) { return load("gpus", name_or_path, &read_gpu); }
ClusterSpec load_cluster(const std::string& name_or_path) {
  return load("clusters", name_or_path, &read_cluster);
}
StackSpec load_stack(const std::string& name_or_path) {
  return load("stacks", name_or_path, &read_stack);
}

Goodput load_goodput(const std::string& name_or_path) { return load("goodput", name_or_path, &read_goodput); }

AttentionKernel load_attention_kernel(const std::string& name_or_path) {
  return load("attention", name_or_path, &read_attention_kernel);
}

StackSpec stack_or_default(const std::string& stack_name) {
  const auto names = preset_names("stacks");
  if (std::find(names.begin(), names.end(), stack_name) == names.end()) {
    StackSpec s;
    s.name = stack_name;
    return s;
  }
  return load_stack(stack_name);
}

}  // namespace parallax
