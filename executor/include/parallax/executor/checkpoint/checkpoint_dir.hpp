#pragma once
// The layout of a checkpoint directory (--checkpoint-dir): one DIR/step_NNNNNN/ per checkpoint,
// holding one safetensors file per (tp, pp) shard and, written last, COMPLETE with the step
// count. Only complete step directories are ever loaded or exported.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::exec {

// DIR/step_NNNNNN, the directory of the checkpoint after `step` steps.
std::string checkpoint_step_dir(const std::string& dir, int64_t step);
// A directory named step_*.
bool is_step_dir(const std::string& path);
// The step directory's *.safetensors files, sorted (empty when there are none).
std::vector<std::string> shard_files(const std::string& step_dir);
// DIR/step_* directories holding COMPLETE, newest first (empty when DIR is not a directory).
std::vector<std::string> complete_checkpoints(const std::string& dir);
// The step count COMPLETE records. Throws InputError when it does not hold one.
int64_t completed_step(const std::string& step_dir);
// DIR itself when it is a complete step directory, else DIR's newest complete checkpoint.
// Throws InputError(DIR, what, ...) when DIR does not exist, is an incomplete step directory or
// holds no complete checkpoint.
std::string resolve_complete_step(const std::string& dir, const std::string& what);

}  // namespace parallax::exec
