// Checkpoint shard files (executor/src/safetensors.cpp) as untrusted input: a round trip through
// two tensor-parallel shards, then headers edited the way a broken or foreign file would be.
// Every edit keeps the data, so the data checksum still holds and the header checks are reached.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/core_test_util.hpp"
#include "parallax/executor/safetensors.hpp"

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

void set_shard_meta(json& h, const json& meta) { h["__metadata__"]["shard:w"] = meta.dump(); }

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
  test::require_input_error(
      [&] { (void)exec::read_shard_file(edited("e1", [](json& h) { h["__metadata__"]["x"] = json::array(); })); },
      "__metadata__.x", {"must be a string"});
  test::require_input_error(
      [&] { (void)exec::read_shard_file(edited("e2", [](json& h) { h["w"]["shape"] = json::array(); })); },
      "w.shape", {"1 to 8 dimensions"});
  test::require_input_error(
      [&] { (void)exec::read_shard_file(edited("e3", [](json& h) { h["w"]["data_offsets"] = {0, 1 << 20}; })); },
      "w.data_offsets[1]", {"must be a whole number from 0 to 24"});
  test::require_input_error(
      [&] { (void)exec::read_shard_file(edited("e4", [](json& h) { h["w"]["dtype"] = "F16"; })); },
      "w.dtype", {"F32"});
  // Shard metadata that would index outside the global tensor or leave local rows unmapped.
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e5", [](json& h) {
          set_shard_meta(h, {{"global_shape", {4, 3}}, {"dim", 0}, {"segments", {{3, 0, 2}}}});
        }));
      },
      "__metadata__.shard:w.segments[0]", {"runs past the global dimension"});
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e6", [](json& h) {
          set_shard_meta(h, {{"global_shape", {4, 3}}, {"dim", 0}, {"segments", {{0, 0, 1}}}});
        }));
      },
      "__metadata__.shard:w.segments", {"do not cover the local dimension"});
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e7", [](json& h) {
          set_shard_meta(h, {{"global_shape", {4, 5}}, {"dim", 0}, {"segments", {{0, 0, 2}}}});
        }));
      },
      "__metadata__.shard:w.global_shape", {"not sharded"});
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e8", [](json& h) {
          set_shard_meta(h, {{"global_shape", {4, 3}}, {"dim", 2}, {"segments", json::array()}});
        }));
      },
      "__metadata__.shard:w.dim", {"from -1 to 1"});
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e9", [](json& h) {
          set_shard_meta(h, {{"global_shape", {1099511627776, 3}}, {"dim", 0}, {"segments", {{0, 0, 2}}}});
        }));
      },
      "__metadata__.shard:w.global_shape", {"2^40 elements"});
  // Only 1- and 2-dimensional tensors may be sharded; others are replicated (the reference's logits).
  test::require_input_error(
      [&] {
        (void)exec::read_shard_file(edited("e10", [](json& h) {
          h["w"]["shape"] = {2, 3, 1};
          set_shard_meta(h, {{"global_shape", {4, 3, 1}}, {"dim", 0}, {"segments", {{0, 0, 2}}}});
        }));
      },
      "__metadata__.shard:w.dim", {"from -1 to -1"});
  // The unedited header still reads.
  CHECK(exec::read_shard_file(edited("ok", [](json&) {})).tensors.size() == 1);
}
