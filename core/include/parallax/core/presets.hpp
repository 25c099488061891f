#pragma once
// Presets are JSON files under presets/{models,gpus,clusters,profiles,stacks,attention}/, embedded into the binary
// at build time (cmake/EmbedPresets.cmake). A name given by a user is either a preset name or a
// path to a JSON file of the same kind.
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/attention_kernel.hpp"
#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/goodput.hpp"
#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {

struct EmbeddedPreset {
  const char* kind;  // "models", "gpus", "clusters", "profiles"
  const char* name;  // file stem
  const char* text;  // file contents
};

std::span<const EmbeddedPreset> embedded_presets();

// Names of the presets of one kind, sorted.
std::vector<std::string> preset_names(const std::string& kind);
// The parsed JSON of a preset; throws InputError naming the kind and the known names.
nlohmann::json preset_json(const std::string& kind, const std::string& name);

// Preset name or JSON file path (anything containing '/' or ending in ".json" is a path).
ModelSpec load_model(const std::string& name_or_path);
GpuSpec load_gpu(const std::string& name_or_path);
ClusterSpec load_cluster(const std::string& name_or_path);
StackSpec load_stack(const std::string& name_or_path);
AttentionKernel load_attention_kernel(const std::string& name_or_path);
Goodput load_goodput(const std::string& name_or_path);
// The stack preset of that name; for a name no preset has, a stack with unfused attention and
// nothing overlapped (a stack Parallax knows nothing about is not assumed to have fused kernels
// or overlaps).
StackSpec stack_or_default(const std::string& stack_name);

}  // namespace parallax
