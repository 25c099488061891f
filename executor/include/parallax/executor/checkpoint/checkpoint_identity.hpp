#pragma once
// Which model a checkpoint belongs to, checked before a run reads or writes a checkpoint
// directory. Every shard records the full model spec ("model", JSON) and its identity hash
// ("model_hash"); a model's identity is its architecture (every field but name and source, which
// only describe it: renaming a model does not orphan its checkpoints).
#include <map>
#include <optional>
#include <string>

#include "parallax/core/model_spec.hpp"

namespace parallax::exec {

// "fnv1a-64:" + 16 hex digits of FNV-1a 64 over the canonical JSON of the architecture.
std::string model_identity_hash(const ModelSpec& m);
// Adds "model" and "model_hash" to a shard's metadata.
void record_model(std::map<std::string, std::string>& metadata, const ModelSpec& m);

// "gpt-tiny (layers 4, hidden 128, heads 4, vocab 512; fnv1a-64:...)".
std::string describe_model(const ModelSpec& m);
// The model a shard records ("model", or the model of its "plan" for checkpoints written before
// models were recorded); nullopt when it records neither. Throws InputError when unreadable.
std::optional<ModelSpec> recorded_model(const std::string& shard_path);
// The same from a shard's metadata already read (shard_path names it in messages).
std::optional<ModelSpec> recorded_model(const std::map<std::string, std::string>& metadata,
                                        const std::string& shard_path);

struct ResumeRequest {
  std::string dir;                 // --checkpoint-dir (empty: none)
  bool resume = false;             // --resume: a checkpoint must be there and load
  bool resume_if_present = false;  // --resume-if-present: resume when there is one, else start fresh
};

// Before anything is loaded or written (identically on every rank): --resume without a
// directory, of a directory that does not exist or holds no complete checkpoint, and a
// directory whose newest complete checkpoint belongs to another model (or records none) are
// refused with InputError naming both models; a checkpoint whose header cannot be read is left
// to the loader, which refuses it and tries an older one.
void check_checkpoint_dir(const ResumeRequest& r, const ModelSpec& plan_model);

}  // namespace parallax::exec
