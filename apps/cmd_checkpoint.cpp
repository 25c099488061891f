// parallax checkpoint inspect DIR: every step of a checkpoint directory (or one step directory)
// with the model and plan it records and each shard file's size, tensors and checksum verified.
// Exit 2 when a shard does not read or verify.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/checkpoint_inspect.hpp"

namespace parallax::cli {

namespace {

void inspect_command(const std::string& dir) {
  const auto steps = exec::inspect_checkpoints(dir);
  int files = 0, failed = 0;
  std::string first_failure;
  for (const auto& s : steps) {
    std::printf("%s  %s\n", s.dir.c_str(),
                s.complete ? ("complete, step " + s.step).c_str() : "incomplete (no COMPLETE: never loaded)");
    std::printf("  model  %s\n", s.model.c_str());
    if (!s.plan.empty()) std::printf("  plan   %s\n", s.plan.c_str());
    std::printf("  %-28s %12s %8s %12s %10s  %s\n", "file", "bytes", "tensors", "parameters", "optimizer",
                "checksum");
    for (const auto& f : s.shards) {
      ++files;
      if (!f.error.empty()) {
        ++failed;
        if (first_failure.empty()) first_failure = f.error;
        std::printf("  %-28s %12llu %8s %12s %10s  FAILED: %s\n", f.file.c_str(),
                    static_cast<unsigned long long>(f.bytes), "-", "-", "-", f.error.c_str());
        continue;
      }
      std::printf("  %-28s %12llu %8lld %12lld %10lld  %s ok\n", f.file.c_str(),
                  static_cast<unsigned long long>(f.bytes), static_cast<long long>(f.tensors),
                  static_cast<long long>(f.parameters), static_cast<long long>(f.optimizer_tensors),
                  f.checksum_rule.c_str());
    }
  }
  if (failed > 0)
    throw InputError(dir, "checkpoint inspect", std::to_string(failed) + " of " + std::to_string(files) +
                                                    " shard files do not verify; the first: " + first_failure);
  std::printf("%d shard files verify\n", files);
}

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect checkpoints written by parallax run");
  cmd->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* inspect = cmd->add_subcommand(
      "inspect", "Every step: model, plan, shard files, sizes; verifies every checksum (exit 2 if one fails)");
  inspect->add_option("DIR", *dir, "checkpoint directory (--checkpoint-dir) or one step_* directory")->required();
  inspect->callback([dir] { inspect_command(*dir); });
}

}  // namespace parallax::cli
