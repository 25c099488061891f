#include "parallax/executor/checkpoint/checkpoint_inspect.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "parallax/core/error.hpp"
#include "parallax/executor/checkpoint/checkpoint_dir.hpp"
#include "parallax/executor/checkpoint/checkpoint_identity.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

namespace parallax::exec {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// "tp=2 pp=2 vpp=1 dp=1 zero=0" from the plan file a shard records (cp, ep and etp when the
// plan has them: "tp=1 pp=1 vpp=1 dp=2 ep=2 zero=0").
std::string plan_layout(const std::map<std::string, std::string>& meta) {
  const auto it = meta.find("plan");
  if (it == meta.end()) return "";
  const json doc = json::parse(it->second, nullptr, false);
  if (!doc.is_object() || !doc.contains("plan") || !doc.at("plan").is_object()) return "unreadable plan record";
  std::string out;
  for (const char* k : {"tp", "cp", "pp", "vpp", "dp", "ep", "etp", "zero"})
    if (doc.at("plan").contains(k)) out += (out.empty() ? "" : " ") + std::string(k) + "=" + doc.at("plan").at(k).dump();
  return out;
}

ShardReport inspect_shard(const fs::path& path) {
  ShardReport r;
  r.file = path.filename().string();
  r.bytes = fs::file_size(path);
  try {
    const ShardFile f = read_shard_file(path.string());  // verifies the checksum
    r.checksum_rule = f.checksum_rule;
    for (const auto& e : f.tensors) {
      if (e.shard.name.rfind("optimizer.", 0) == 0) {
        ++r.optimizer_tensors;
        continue;
      }
      ++r.tensors;
      r.parameters += e.shard.numel();
    }
  } catch (const InputError& e) {
    r.error = e.what();
  }
  return r;
}

StepReport inspect_step(const fs::path& sd) {
  StepReport s;
  s.dir = sd.string();
  s.complete = fs::exists(sd / "COMPLETE");
  if (s.complete) {
    std::ifstream in(sd / "COMPLETE");
    std::getline(in, s.step);
  }
  const auto shards = shard_files(sd.string());
  for (const auto& p : shards) s.shards.push_back(inspect_shard(p));
  if (shards.empty()) {
    s.model = "no shard files";
    return s;
  }
  try {
    const auto meta = read_shard_metadata(shards.front());
    const auto m = recorded_model(meta, shards.front());
    s.model = m ? describe_model(*m) : "not recorded";
    s.plan = plan_layout(meta);
    if (const auto it = meta.find("parallax_format"); it != meta.end()) s.format = it->second;
  } catch (const InputError& e) {
    s.model = std::string("unreadable: ") + e.what();
  }
  return s;
}

}  // namespace

std::vector<StepReport> inspect_checkpoints(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "checkpoint inspect", "no such directory");
  const fs::path root(dir);
  if (fs::exists(root / "COMPLETE") || is_step_dir(dir)) return {inspect_step(root)};
  std::vector<fs::path> steps;
  for (const auto& e : fs::directory_iterator(root))
    if (is_step_dir(e.path().string())) steps.push_back(e.path());
  if (steps.empty())
    throw InputError(dir, "checkpoint inspect", "holds no step_* directory (not a checkpoint directory)");
  std::sort(steps.rbegin(), steps.rend());
  std::vector<StepReport> out;
  for (const auto& sd : steps) out.push_back(inspect_step(sd));
  return out;
}

}  // namespace parallax::exec
