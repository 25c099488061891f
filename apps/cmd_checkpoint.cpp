// parallax checkpoint inspect DIR: every step of a checkpoint directory (or one step directory)
// with the model and plan it records and each shard file's size, tensors and checksum verified.
// Exit 2 when a shard does not read or verify.
// parallax checkpoint export DIR --hf OUT: the newest complete checkpoint (or the step directory
// given) as a Hugging Face model directory (executor/hf_export.hpp).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/checkpoint/checkpoint_inspect.hpp"
#include "parallax/executor/checkpoint/hf_export.hpp"

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
    if (!s.format.empty()) std::printf("  format %s\n", s.format.c_str());
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

struct ExportFlags {
  std::string checkpoint;
  std::string out_dir;
  std::string max_shard_size = "5GB";
  std::string dtype = "fp32";
};

void export_command(const ExportFlags& f) {
  exec::HfExportOptions o;
  o.checkpoint = f.checkpoint;
  o.out_dir = f.out_dir;
  o.max_shard_bytes = exec::parse_byte_size(f.max_shard_size, "--max-shard-size");
  o.dtype = f.dtype;
  const auto s = exec::export_hf(o);
  std::printf("exported %s (step %lld) to %s\n", s.step_dir.c_str(), static_cast<long long>(s.step),
              f.out_dir.c_str());
  std::printf("  model       %s as %s (%s embeddings)\n", s.model.name.c_str(), s.architecture.c_str(),
              s.model.tied_embeddings ? "tied" : "untied");
  std::printf("  tensors     %lld, %lld parameters, %llu bytes (%s); optimizer state left out\n",
              static_cast<long long>(s.tensors), static_cast<long long>(s.parameters),
              static_cast<unsigned long long>(s.tensor_bytes), f.dtype.c_str());
  std::printf("  vocabulary  %lld rows (%lld padding rows removed)\n", static_cast<long long>(s.model.vocab),
              static_cast<long long>(s.padding_rows_removed));
  for (const auto& file : s.files) std::printf("  %s\n", file.c_str());
}

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect or export checkpoints written by parallax run");
  cmd->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* inspect = cmd->add_subcommand(
      "inspect", "Every step: model, plan, shard files, sizes; verifies every checksum (exit 2 if one fails)");
  inspect->add_option("DIR", *dir, "checkpoint directory (--checkpoint-dir) or one step_* directory")->required();
  inspect->callback([dir] { inspect_command(*dir); });

  auto flags = std::make_shared<ExportFlags>();
  CLI::App* exp = cmd->add_subcommand(
      "export", "A complete checkpoint as a Hugging Face model directory (GPT-2 family; parameters only)");
  exp->add_option("DIR", flags->checkpoint, "checkpoint directory (its newest complete step) or one step_* directory")
      ->required();
  exp->add_option("--hf", flags->out_dir,
                  "output: a new (or empty) directory for config.json and model.safetensors (or shards + index)")
      ->required();
  exp->add_option("--max-shard-size", flags->max_shard_size,
                  "largest shard file, as transformers' save_pretrained: 5GB, 500MB, 10GiB or bytes (default 5GB)");
  exp->add_option("--dtype", flags->dtype, "fp32 (as trained, default) or bf16 (rounded to nearest even)");
  exp->callback([flags] { export_command(*flags); });
}

}  // namespace parallax::cli
