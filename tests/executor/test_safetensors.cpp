// Checkpoint shard files (executor/src/checkpoint/safetensors.cpp) as untrusted input: a round trip through
// two tensor-parallel shards, then headers edited the way a broken or foreign file would be.
// Every edit keeps the data, so the data checksum still holds and the header checks are reached.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/core_test_util.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/executor/checkpoint/checkpoint_identity.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

namespace {

using namespace parallax;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("parallax_safetensors_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Tensor "w" of global shape [4, 3], rows [2*rank, 2*rank+2) on tp rank `rank` (dim 0 sharded).
exec::ShardFile shard(int rank) {
  exec::ShardEntry e;
  e.shard.name = "w";
  e.shard.global_shape = {4, 3};
  e.shard.local_shape = {2, 3};
  e.shard.shard_dim = 0;
  e.shard.segments = {{2 * rank, 0, 2}};
  for (int i = 0; i < 6; ++i) e.data.push_back(static_cast<float>(6 * rank + i));
  exec::ShardFile f;
  f.tensors.push_back(e);
  return f;
}

std::string write(const std::string& name, const exec::ShardFile& f) {
  const std::string path = (scratch() / name).string();
  exec::write_shard_file(path, f);
  return path;
}

// The file's header, edited by `edit`, written back in front of the same data.
std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
  const std::string src = write(name + ".orig", shard(0));
  std::ifstream in(src, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  json header = json::parse(bytes.substr(8, n));
  edit(header);
  const std::string h = header.dump();
  const uint64_t m = h.size();
  const std::string path = (scratch() / name).string();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&m), 8);
  out << h << bytes.substr(8 + n);
  return path;
}

// read_shard_file of shard 0's file with its header edited by `edit` must fail at `path`.
void require_header_error(const std::string& name, const std::function<void(json&)>& edit,
                          const std::string& path, std::initializer_list<std::string> words) {
  const std::string file = edited(name, edit);
  test::require_input_error([&] { (void)exec::read_shard_file(file); }, path, words);
}

// An edit replacing tensor w's shard metadata.
std::function<void(json&)> shard_meta(const json& global_shape, int dim, const json& segments) {
  return [=](json& h) {
    h["__metadata__"]["shard:w"] =
        json{{"global_shape", global_shape}, {"dim", dim}, {"segments", segments}}.dump();
  };
}

}  // namespace

TEST_CASE("two tensor-parallel shards reassemble into the global tensor") {
  const std::vector<exec::ShardFile> files = {exec::read_shard_file(write("a.safetensors", shard(0))),
                                              exec::read_shard_file(write("b.safetensors", shard(1)))};
  const auto all = exec::assemble(files);
  REQUIRE(all.count("w") == 1);
  CHECK(all.at("w").shape == std::vector<int64_t>{4, 3});
  for (int i = 0; i < 12; ++i) CHECK(all.at("w").data[static_cast<size_t>(i)] == static_cast<float>(i));
}

TEST_CASE("a checkpoint missing a shard file is refused, not filled with zeros") {
  const std::vector<exec::ShardFile> one = {exec::read_shard_file(write("only.safetensors", shard(1)))};
  test::require_input_error([&] { (void)exec::assemble(one); }, "w",
                            {"hold 6 of its 12 elements", "a shard file is missing"});
}

TEST_CASE("shard files that disagree on a tensor's global shape are refused") {
  exec::ShardFile other = shard(1);
  other.tensors[0].shard.global_shape = {6, 3};
  const std::vector<exec::ShardFile> files = {exec::read_shard_file(write("c.safetensors", shard(0))),
                                              exec::read_shard_file(write("d.safetensors", other))};
  test::require_input_error([&] { (void)exec::assemble(files); }, "w", {"global shape differs"});
}

TEST_CASE("bad shard headers: one InputError naming the field, never a library exception") {
  // fuzz_safetensors: a metadata value that is not a string escaped as nlohmann's type_error.
  require_header_error("e1", [](json& h) { h["__metadata__"]["x"] = json::array(); },
                       "__metadata__.x", {"must be a string"});
  require_header_error("e2", [](json& h) { h["w"]["shape"] = json::array(); }, "w.shape",
                       {"1 to 8 dimensions"});
  require_header_error("e3", [](json& h) { h["w"]["data_offsets"] = {0, 1 << 20}; },
                       "w.data_offsets[1]", {"must be a whole number from 0 to 24"});
  require_header_error("e4", [](json& h) { h["w"]["dtype"] = "F16"; }, "w.dtype", {"F32"});
  // Shard metadata that would index outside the global tensor or leave local rows unmapped.
  require_header_error("e5", shard_meta({4, 3}, 0, {{3, 0, 2}}), "__metadata__.shard:w.segments[0]",
                       {"runs past the global dimension"});
  require_header_error("e6", shard_meta({4, 3}, 0, {{0, 0, 1}}), "__metadata__.shard:w.segments",
                       {"do not cover the local dimension"});
  require_header_error("e7", shard_meta({4, 5}, 0, {{0, 0, 2}}),
                       "__metadata__.shard:w.global_shape", {"not sharded"});
  require_header_error("e8", shard_meta({4, 3}, 2, json::array()), "__metadata__.shard:w.dim",
                       {"from -1 to 1"});
  require_header_error("e9", shard_meta({1099511627776, 3}, 0, {{0, 0, 2}}),
                       "__metadata__.shard:w.global_shape", {"2^40 elements"});
  // Only 1- and 2-dimensional tensors may be sharded; others are replicated (the reference's logits).
  require_header_error(
      "e10",
      [](json& h) {
        h["w"]["shape"] = {2, 3, 1};
        shard_meta({4, 3, 1}, 0, {{0, 0, 2}})(h);
      },
      "__metadata__.shard:w.dim", {"from -1 to -1"});
  // The unedited header still reads.
  CHECK(exec::read_shard_file(edited("ok", [](json&) {})).tensors.size() == 1);
}

// The published FNV-1a 64 test vectors (the FNV specification, draft-eastlake-fnv, and Noll's
// reference code): the empty string is the offset basis itself.
TEST_CASE("the data checksum is FNV-1a 64 as specified") {
  auto fnv = [](const std::string& s) { return exec::hex64(exec::fnv1a_64(s.data(), s.size())); };
  CHECK(fnv("") == "cbf29ce484222325");
  CHECK(fnv("a") == "af63dc4c8601ec8c");
  CHECK(fnv("foobar") == "85944171f73967e8");
}

namespace {

// A shard file's header and data section, as an outside tool sees them.
std::pair<json, std::string> header_and_data(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

// The rule checkpoints carried before, written out here from its definition: FNV-1a's loop
// with the offset basis 1469598103934665603.
std::string legacy_sum(const std::string& data) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ULL;
  return std::to_string(h);
}

}  // namespace

TEST_CASE("a written shard names its checksum, which an outside FNV-1a 64 verifies") {
  const auto [header, data] = header_and_data(write("named.safetensors", shard(0)));
  const json& meta = header.at("__metadata__");
  CHECK(meta.at("checksum_algorithm") == "fnv1a-64");
  CHECK(meta.at("checksum") == exec::hex64(exec::fnv1a_64(data.data(), data.size())));
  CHECK_FALSE(meta.contains("checksum_fnv1a64"));
  CHECK(exec::read_shard_file(write("named2.safetensors", shard(0))).checksum_rule == "fnv1a-64");
}

TEST_CASE("checkpoints written before are verified by their own rule, never accepted unchecked") {
  const std::string data = header_and_data(write("legacy.orig", shard(0))).second;
  auto legacy = [&](const std::string& sum) {
    return [=](json& h) {
      h["__metadata__"].erase("checksum");
      h["__metadata__"].erase("checksum_algorithm");
      h["__metadata__"]["checksum_fnv1a64"] = sum;
    };
  };
  const auto old_file = exec::read_shard_file(edited("legacy-ok", legacy(legacy_sum(data))));
  CHECK(old_file.checksum_rule.rfind("checksum_fnv1a64", 0) == 0);
  CHECK(old_file.tensors.size() == 1);
  require_header_error("legacy-bad", legacy(std::to_string(exec::fnv1a_64(data.data(), data.size()))),
                       "__metadata__.checksum_fnv1a64", {"checksum mismatch"});
  // The old value under the new name is what an outside tool would have rejected: so do we.
  require_header_error(
      "legacy-as-new",
      [&](json& h) { h["__metadata__"]["checksum"] = exec::hex64(std::stoull(legacy_sum(data))); },
      "__metadata__.checksum", {"checksum mismatch"});
  require_header_error("unknown-algorithm", [](json& h) { h["__metadata__"]["checksum_algorithm"] = "crc32"; },
                       "__metadata__.checksum_algorithm", {"must be \"fnv1a-64\"", "crc32"});
  require_header_error(
      "no-checksum",
      [](json& h) {
        h["__metadata__"].erase("checksum");
        h["__metadata__"].erase("checksum_algorithm");
      },
      "__metadata__.checksum", {"no checksum"});
}

TEST_CASE("a checkpoint's model identity is its weights' architecture: dropout is not part of it") {
  ModelSpec m = parallax::load_model("gpt-tiny");
  const std::string id = parallax::exec::model_identity_hash(m);
  m.dropout = 0;
  CHECK(parallax::exec::model_identity_hash(m) == id);
  m.name = "renamed";
  CHECK(parallax::exec::model_identity_hash(m) == id);
  m.heads = 2;
  CHECK(parallax::exec::model_identity_hash(m) != id);
}
