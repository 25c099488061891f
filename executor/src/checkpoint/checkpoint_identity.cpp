#include "parallax/executor/checkpoint/checkpoint_identity.hpp"

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/executor/checkpoint/checkpoint_dir.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

namespace parallax::exec {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json architecture(const ModelSpec& m) {
  json j = to_json(m);
  j.erase("name");
  j.erase("source");
  // Dropout is how the weights were trained, not what they are; checkpoints written before the
  // model had the field keep their identity.
  j.erase("dropout");
  return j;  // nlohmann::json keeps keys sorted: the dump is canonical
}

}  // namespace

std::string describe_model(const ModelSpec& m) {
  return m.name + " (layers " + std::to_string(m.layers) + ", hidden " + std::to_string(m.hidden) +
         ", heads " + std::to_string(m.heads) + ", vocab " + std::to_string(m.vocab) + "; " +
         model_identity_hash(m) + ")";
}

std::optional<ModelSpec> recorded_model(const std::string& shard_path) {
  return recorded_model(read_shard_metadata(shard_path), shard_path);
}

std::optional<ModelSpec> recorded_model(const std::map<std::string, std::string>& meta,
                                        const std::string& shard_path) {
  json doc;
  std::string path = "$";
  if (const auto it = meta.find("model"); it != meta.end()) {
    doc = parse_json_text(it->second, shard_path + " (metadata \"model\")");
  } else if (const auto p = meta.find("plan"); p != meta.end()) {
    const json plan = parse_json_text(p->second, shard_path + " (metadata \"plan\")");
    if (!plan.is_object() || !plan.contains("model"))
      throw InputError(shard_path, "__metadata__.plan", "names no model");
    doc = plan.at("model");
    path = "$.model";
  } else {
    return std::nullopt;
  }
  JsonObjectReader r(doc, shard_path + " (recorded model)", path);
  ModelSpec m = read_model(r);
  r.finish();
  return m;
}

std::string model_identity_hash(const ModelSpec& m) {
  const std::string text = architecture(m).dump();
  return "fnv1a-64:" + hex64(fnv1a_64(text.data(), text.size()));
}

void record_model(std::map<std::string, std::string>& metadata, const ModelSpec& m) {
  metadata["model"] = to_json(m).dump();
  metadata["model_hash"] = model_identity_hash(m);
}

void check_checkpoint_dir(const ResumeRequest& r, const ModelSpec& plan_model) {
  const bool resuming = r.resume || r.resume_if_present;
  if (resuming && r.dir.empty())
    throw InputError("command line", r.resume ? "--resume" : "--resume-if-present", "needs --checkpoint-dir");
  if (r.resume && r.resume_if_present)
    throw InputError("command line", "--resume", "and --resume-if-present exclude each other");
  if (r.dir.empty()) return;
  std::error_code ec;
  if (r.resume && !fs::is_directory(r.dir, ec))
    throw InputError(r.dir, "--resume", "no such checkpoint directory (--resume-if-present starts fresh instead)");
  const auto steps = complete_checkpoints(r.dir);
  if (r.resume && steps.empty())
    throw InputError(r.dir, "--resume", "holds no complete checkpoint (--resume-if-present starts fresh instead)");
  // The newest complete checkpoint whose header reads decides whose directory this is; one that
  // does not read is refused later by the loader, with its reason.
  for (const auto& sd : steps) {
    const auto shards = shard_files(sd);
    if (shards.empty()) continue;
    const std::string& shard = shards.front();
    std::optional<ModelSpec> theirs;
    try {
      theirs = recorded_model(shard);
    } catch (const InputError&) {
      continue;
    }
    if (!theirs)
      throw InputError(sd, "model", "this checkpoint records no model (another tool's?); the plan's is " +
                                        describe_model(plan_model) + ": nothing was loaded or written");
    if (model_identity_hash(*theirs) != model_identity_hash(plan_model))
      throw InputError(sd, "model", "this checkpoint is of " + describe_model(*theirs) + ", the plan's model is " +
                                        describe_model(plan_model) +
                                        ": nothing was loaded or written (use another --checkpoint-dir)");
    return;
  }
}

}  // namespace parallax::exec
