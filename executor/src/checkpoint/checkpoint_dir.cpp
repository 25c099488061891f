#include "parallax/executor/checkpoint/checkpoint_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "parallax/core/error.hpp"

namespace parallax::exec {

namespace fs = std::filesystem;

std::string checkpoint_step_dir(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%06lld", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

bool is_step_dir(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::path(path).lexically_normal();
  const std::string name = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  return fs::is_directory(p, ec) && name.rfind("step_", 0) == 0;
}

std::vector<std::string> shard_files(const std::string& step_dir) {
  std::vector<std::string> shards;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(step_dir, ec))
    if (e.path().extension() == ".safetensors") shards.push_back(e.path().string());
  std::sort(shards.begin(), shards.end());
  return shards;
}

std::vector<std::string> complete_checkpoints(const std::string& dir) {
  std::vector<std::string> steps;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return steps;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_step_dir(e.path().string()) && fs::exists(e.path() / "COMPLETE")) steps.push_back(e.path().string());
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

int64_t completed_step(const std::string& step_dir) {
  std::ifstream in(fs::path(step_dir) / "COMPLETE");
  long long step = -1;
  if (!(in >> step) || step < 0)
    throw InputError((fs::path(step_dir) / "COMPLETE").string(), "step", "must hold the step count (an integer >= 0)");
  return step;
}

std::string resolve_complete_step(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, what, "no such directory");
  if (fs::exists(fs::path(dir) / "COMPLETE")) return dir;
  if (is_step_dir(dir))
    throw InputError(dir, what, "this step directory has no COMPLETE marker (an interrupted checkpoint, never loaded or exported)");
  const auto steps = complete_checkpoints(dir);
  if (steps.empty()) throw InputError(dir, what, "holds no complete checkpoint (no step_*/COMPLETE)");
  return steps.front();
}

}  // namespace parallax::exec
