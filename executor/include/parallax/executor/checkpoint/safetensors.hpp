#pragma once
// safetensors files (8-byte little-endian header length, JSON header, raw little-endian data)
// holding tensor shards: each tensor's "__metadata__" entry "shard:<name>" records the global
// shape, the sharded dimension and the segments this shard covers, so a set of files from any
// plan can be reassembled into global tensors and resharded for another plan. The header also
// names a checksum of the data section and carries it ("checksum_algorithm": "fnv1a-64",
// "checksum": 16 lowercase hex digits of FNV-1a 64 as specified), verified on load; files are
// written atomically.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/param_table.hpp"

namespace parallax::exec {

struct ShardEntry {
  ParamTensor shard;  // name, global/local shape, shard_dim, segments (offset unused)
  std::vector<float> data;
};

// The one checksum written; the rule of files written before it, verified by that rule only.
inline constexpr const char* kChecksumAlgorithm = "fnv1a-64";
inline constexpr const char* kLegacyChecksumRule =
    "checksum_fnv1a64 (parallax before 2026-11: offset basis 1469598103934665603)";

struct ShardFile {
  std::string path;  // where it was read from (read_shard_file), for messages
  std::string checksum_rule;  // read_shard_file: kChecksumAlgorithm or kLegacyChecksumRule
  std::map<std::string, std::string> metadata;
  std::vector<ShardEntry> tensors;
};

void write_shard_file(const std::string& path, const ShardFile& f);

// One tensor of a plain safetensors file: its bytes (little-endian, row-major) as they go to disk.
struct TensorBytes {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<int64_t> shape;
  std::string_view bytes;
};
// A safetensors file as the format specifies it: the tensors back to back in the given order
// (no holes), the header padded with spaces to a multiple of 8 bytes, metadata as strings.
// Written durably (durable_file); failures throw InputError(path, field, ...).
void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const std::string& field = "--checkpoint-dir");
// Throws InputError(path, ...) when the file is truncated, malformed or its checksum is wrong,
// or a tensor's shard metadata does not map every local element into its global tensor.
ShardFile read_shard_file(const std::string& path);
// Only the header's metadata (the data is neither read nor verified): what a checkpoint says it
// is, read cheaply before anything is loaded. Throws InputError like read_shard_file.
std::map<std::string, std::string> read_shard_metadata(const std::string& path);

struct GlobalTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  std::vector<bool> filled;
};
// Every tensor of the files reassembled; tensors whose name starts with `prefix` only. Throws
// InputError when two files disagree on a tensor's global shape or the files leave part of a
// tensor uncovered (a shard file missing).
std::map<std::string, GlobalTensor> assemble(const std::vector<ShardFile>& files,
                                             const std::string& prefix = "");
// Copies this shard's part of the global tensor into out (t.numel() floats).
void extract_shard(const GlobalTensor& g, const ParamTensor& t, float* out);

// FNV-1a, 64 bits, as specified (offset basis 14695981039346656037, prime 2^40 + 2^8 + 0xb3).
uint64_t fnv1a_64(const void* data, size_t bytes);
// The variant checkpoints carried before (the offset basis a digit short), for verifying those.
uint64_t legacy_parallax_fnv64(const void* data, size_t bytes);
// 16 lowercase hex digits.
std::string hex64(uint64_t v);

}  // namespace parallax::exec
