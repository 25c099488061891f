#pragma once
// What a checkpoint directory holds, read and verified without a run (`parallax checkpoint
// inspect`): every step directory, whether it is complete, the model and plan it records, and
// each shard file with its size, tensors and checksum verified.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::exec {

struct ShardReport {
  std::string file;            // file name in its step directory
  uint64_t bytes = 0;
  int64_t tensors = 0;         // model tensors (optimizer state not counted)
  int64_t parameters = 0;      // their elements in this shard
  int64_t optimizer_tensors = 0;
  std::string checksum_rule;   // kChecksumAlgorithm or kLegacyChecksumRule when it verified
  std::string error;           // why it does not read or verify (empty: it does)
};

struct StepReport {
  std::string dir;
  bool complete = false;  // COMPLETE present: the only kind a run loads
  std::string step;       // COMPLETE's step count (empty when incomplete)
  std::string model;      // the recorded model, described (or why it cannot be told)
  std::string plan;       // the writing plan's parallel layout (empty when not recorded)
  std::string format;     // the shards' parallax_format: names and layout (HF GPT-2's or Llama's)
  std::vector<ShardReport> shards;
};

// DIR is a checkpoint directory (its step_* subdirectories, newest first) or one step directory.
// Throws InputError when DIR is neither.
std::vector<StepReport> inspect_checkpoints(const std::string& dir);

}  // namespace parallax::exec
