#include "parallax/executor/checkpoint/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "durable_file.hpp"
#include "parallax/core/error.hpp"

namespace parallax::exec {

using nlohmann::json;

namespace {

constexpr uint64_t kFnv64Prime = 1099511628211ULL;  // 2^40 + 2^8 + 0xb3
constexpr uint64_t kFnv64OffsetBasis = 14695981039346656037ULL;

uint64_t fnv1a_64_from(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * kFnv64Prime;
  return h;
}

}  // namespace

uint64_t fnv1a_64(const void* data, size_t bytes) {
  return fnv1a_64_from(kFnv64OffsetBasis, data, bytes);
}

uint64_t legacy_parallax_fnv64(const void* data, size_t bytes) {
  return fnv1a_64_from(1469598103934665603ULL, data, bytes);
}

std::string hex64(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof(s), "%016llx", static_cast<unsigned long long>(v));
  return s;
}

namespace {

json shard_json(const ParamTensor& t) {
  json segs = json::array();
  for (const auto& s : t.segments) segs.push_back({s.global_start, s.local_start, s.length});
  return {{"global_shape", t.global_shape}, {"dim", t.shard_dim}, {"segments", segs}};
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata, const std::string& field) {
  json header = json::object();
  json meta = json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  std::vector<std::string_view> parts(2);
  size_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
    parts.push_back(t.bytes);
  }
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  const uint64_t n = h.size();
  parts[0] = std::string_view(reinterpret_cast<const char*>(&n), 8);
  parts[1] = h;
  write_file_durably(path, parts, field);
}

void write_shard_file(const std::string& path, const ShardFile& f) {
  std::map<std::string, std::string> meta = f.metadata;
  std::vector<TensorBytes> tensors;
  uint64_t checksum = kFnv64OffsetBasis;
  for (const auto& e : f.tensors) {
    const std::string_view bytes(reinterpret_cast<const char*>(e.data.data()), e.data.size() * sizeof(float));
    tensors.push_back({e.shard.name, "F32", e.shard.local_shape, bytes});
    checksum = fnv1a_64_from(checksum, bytes.data(), bytes.size());  // over the data section, in order
    meta["shard:" + e.shard.name] = shard_json(e.shard).dump();
  }
  meta["checksum_algorithm"] = kChecksumAlgorithm;
  meta["checksum"] = hex64(checksum);
  write_safetensors(path, tensors, meta);
}

namespace {

// Checkpoint headers are input like any file a user hands us: every field is checked before it
// is used to size or index memory (fuzz_safetensors found a metadata value of the wrong type
// escaping as a JSON library exception).
constexpr int64_t kMaxDim = int64_t{1} << 40;  // elements along one dimension
constexpr int64_t kMaxElements = int64_t{1} << 40;

class HeaderReader {
 public:
  explicit HeaderReader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw InputError(path_, where, why);
  }
  const json& member(const json& o, const std::string& key, const std::string& where) const {
    if (!o.is_object()) fail(where, "must be an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(where + "." + key, "is required");
    return *it;
  }
  int64_t whole(const json& v, int64_t min, int64_t max, const std::string& where) const {
    if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)))
      fail(where, "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return v.get<int64_t>();
  }
  // A shape of 1 to 8 dimensions, each 0..kMaxDim, at most kMaxElements in all.
  std::vector<int64_t> shape(const json& v, int64_t min_dim, const std::string& where) const {
    if (!v.is_array() || v.empty() || v.size() > 8) fail(where, "must be an array of 1 to 8 dimensions");
    std::vector<int64_t> out;
    int64_t n = 1;
    for (size_t i = 0; i < v.size(); ++i) {
      out.push_back(whole(v[i], min_dim, kMaxDim, where + "[" + std::to_string(i) + "]"));
      if (out.back() > 0 && n > kMaxElements / out.back()) fail(where, "more than 2^40 elements");
      n *= out.back();
    }
    return out;
  }

 private:
  const std::string& path_;
};

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The shard's place in its global tensor: "shard:<name>" metadata, checked against the local
// shape so that every local element maps to exactly one element of the global tensor.
void read_shard_metadata(const HeaderReader& r, const std::string& text, ParamTensor& t,
                         const std::string& where) {
  json s;
  try {
    s = json::parse(text);
  } catch (const json::exception&) {
    r.fail(where, "malformed shard metadata");
  }
  t.global_shape = r.shape(r.member(s, "global_shape", where), 1, where + ".global_shape");
  const auto rank = static_cast<int64_t>(t.local_shape.size());
  if (static_cast<int64_t>(t.global_shape.size()) != rank)
    r.fail(where + ".global_shape", "has " + std::to_string(t.global_shape.size()) +
                                        " dimensions, the tensor's shape " + std::to_string(rank));
  // Sharded tensors are the executor's weights: 1 or 2 dimensions (global_flat_index).
  t.shard_dim = static_cast<int>(r.whole(r.member(s, "dim", where), -1, rank <= 2 ? rank - 1 : -1, where + ".dim"));
  for (int64_t d = 0; d < rank; ++d)
    if (d != t.shard_dim && t.local_shape[static_cast<size_t>(d)] != t.global_shape[static_cast<size_t>(d)])
      r.fail(where + ".global_shape", "differs from the shape in dimension " + std::to_string(d) +
                                          ", which is not sharded");
  const json& segs = r.member(s, "segments", where);
  if (!segs.is_array()) r.fail(where + ".segments", "must be an array");
  if (t.shard_dim < 0) {
    if (!segs.empty()) r.fail(where + ".segments", "must be empty for a replicated tensor");
    return;
  }
  const auto dim = static_cast<size_t>(t.shard_dim);
  int64_t covered = 0;  // segments in local order, back to back from 0
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string w = where + ".segments[" + std::to_string(i) + "]";
    if (!segs[i].is_array() || segs[i].size() != 3) r.fail(w, "must be [global_start, local_start, length]");
    const ShardSegment g{r.whole(segs[i][0], 0, kMaxDim, w + "[0]"), r.whole(segs[i][1], 0, kMaxDim, w + "[1]"),
                         r.whole(segs[i][2], 1, kMaxDim, w + "[2]")};
    if (g.local_start != covered) r.fail(w, "must start where the previous segment ended (local " + std::to_string(covered) + ")");
    if (g.global_start + g.length > t.global_shape[dim]) r.fail(w, "runs past the global dimension");
    covered += g.length;
    if (covered > t.local_shape[dim]) r.fail(w, "runs past the local dimension");
    t.segments.push_back(g);
  }
  if (covered != t.local_shape[dim]) r.fail(where + ".segments", "do not cover the local dimension");
}

// The data section's checksum, by the rule the file names: "checksum_algorithm" "fnv1a-64" with
// "checksum" in hex, or (files written before) "checksum_fnv1a64", verified by that variant's
// own rule. Returns the rule used; a file with neither, an unknown algorithm or a mismatch is
// refused.
std::string verify_checksum(const HeaderReader& r, const std::map<std::string, std::string>& meta,
                            const std::string& data) {
  const auto algorithm = meta.find("checksum_algorithm");
  const auto sum = meta.find("checksum");
  if (algorithm != meta.end() || sum != meta.end()) {
    if (algorithm == meta.end()) r.fail("__metadata__.checksum_algorithm", "is required beside checksum");
    if (algorithm->second != kChecksumAlgorithm)
      r.fail("__metadata__.checksum_algorithm",
             "must be \"" + std::string(kChecksumAlgorithm) + "\" (got \"" + algorithm->second + "\")");
    if (sum == meta.end()) r.fail("__metadata__.checksum", "is required");
    if (sum->second != hex64(fnv1a_64(data.data(), data.size())))
      r.fail("__metadata__.checksum", "checksum mismatch: the data is corrupted or truncated");
    return kChecksumAlgorithm;
  }
  const auto legacy = meta.find("checksum_fnv1a64");
  if (legacy == meta.end()) r.fail("__metadata__.checksum", "is required (no checksum in the file)");
  if (legacy->second != std::to_string(legacy_parallax_fnv64(data.data(), data.size())))
    r.fail("__metadata__.checksum_fnv1a64", "checksum mismatch: the data is corrupted or truncated");
  return kLegacyChecksumRule;
}

// The JSON header of a file whose total size is file_bytes, from its first 8 + n bytes.
json parse_header(const std::string& path, const std::string& head, uint64_t file_bytes) {
  auto bad = [&](const std::string& why) { return InputError(path, "safetensors", why); };
  if (file_bytes < 8 || head.size() < 8) throw bad("truncated (no header length)");
  uint64_t n = 0;
  std::memcpy(&n, head.data(), 8);
  if (n > file_bytes - 8 || n > head.size() - 8) throw bad("truncated (header longer than the file)");
  json header;
  try {
    header = json::parse(head.substr(8, n));
  } catch (const std::exception&) {
    throw bad("malformed header");
  }
  if (!header.is_object()) throw bad("the header must be a JSON object");
  if (!header.contains("__metadata__")) throw bad("no __metadata__");
  return header;
}

std::map<std::string, std::string> metadata_strings(const HeaderReader& r, const json& header) {
  const json& meta = header.at("__metadata__");
  if (!meta.is_object()) r.fail("__metadata__", "must be an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : meta.items()) {
    if (!v.is_string()) r.fail("__metadata__." + k, "must be a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> read_shard_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path, "file", "cannot open");
  const auto file_bytes = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::string head(8, '\0');
  if (file_bytes >= 8) in.read(head.data(), 8);
  uint64_t n = 0;
  std::memcpy(&n, head.data(), 8);
  if (file_bytes >= 8 && n <= file_bytes - 8) {
    head.resize(8 + n);
    in.read(head.data() + 8, static_cast<std::streamsize>(n));
  }
  const json header = parse_header(path, head, file_bytes);
  return metadata_strings(HeaderReader(path), header);
}

ShardFile read_shard_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "file", "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return InputError(path, "safetensors", why); };
  const json header = parse_header(path, bytes, bytes.size());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const std::string data = bytes.substr(8 + n);
  const HeaderReader r(path);
  ShardFile f;
  f.path = path;
  f.metadata = metadata_strings(r, header);
  f.checksum_rule = verify_checksum(r, f.metadata, data);
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    ShardEntry e;
    e.shard.name = name;
    if (r.member(v, "dtype", name) != "F32") r.fail(name + ".dtype", "must be \"F32\"");
    e.shard.local_shape = r.shape(r.member(v, "shape", name), 0, name + ".shape");
    const json& off = r.member(v, "data_offsets", name);
    if (!off.is_array() || off.size() != 2) r.fail(name + ".data_offsets", "must be [begin, end]");
    const auto size = static_cast<int64_t>(data.size());
    const int64_t begin = r.whole(off[0], 0, size, name + ".data_offsets[0]");
    const int64_t end = r.whole(off[1], begin, size, name + ".data_offsets[1]");
    if ((end - begin) != e.shard.numel() * static_cast<int64_t>(sizeof(float)))
      throw bad(name + ": size/shape mismatch");
    e.data.resize(static_cast<size_t>(end - begin) / sizeof(float));
    if (end > begin) std::memcpy(e.data.data(), data.data() + begin, static_cast<size_t>(end - begin));
    const auto sm = f.metadata.find("shard:" + name);
    if (sm == f.metadata.end()) throw bad(name + ": no shard metadata");
    read_shard_metadata(r, sm->second, e.shard, "__metadata__.shard:" + name);
    f.tensors.push_back(std::move(e));
  }
  return f;
}

std::map<std::string, GlobalTensor> assemble(const std::vector<ShardFile>& files,
                                             const std::string& prefix) {
  std::map<std::string, GlobalTensor> out;
  std::map<std::string, std::string> first_file;  // tensor -> the file that set its shape
  for (const auto& f : files)
    for (const auto& e : f.tensors) {
      if (e.shard.name.rfind(prefix, 0) != 0) continue;
      GlobalTensor& g = out[e.shard.name];
      if (g.shape.empty()) {
        g.shape = e.shard.global_shape;
        const auto n = static_cast<size_t>(product(g.shape));
        g.data.assign(n, 0.0f);
        g.filled.assign(n, false);
        first_file[e.shard.name] = f.path;
      } else if (g.shape != e.shard.global_shape) {
        throw InputError(f.path, e.shard.name, "global shape differs from the one in " + first_file[e.shard.name]);
      }
      for (int64_t i = 0; i < e.shard.numel(); ++i) {
        const auto gi = static_cast<size_t>(global_flat_index(e.shard, i));
        g.data[gi] = e.data[static_cast<size_t>(i)];
        g.filled[gi] = true;
      }
    }
  for (const auto& [name, g] : out) {
    const auto have = std::count(g.filled.begin(), g.filled.end(), true);
    if (have != static_cast<std::ptrdiff_t>(g.filled.size()))
      throw InputError(first_file[name], name,
                       "the checkpoint's files hold " + std::to_string(have) + " of its " +
                           std::to_string(g.filled.size()) + " elements (a shard file is missing)");
  }
  return out;
}

void extract_shard(const GlobalTensor& g, const ParamTensor& t, float* out) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    // Vocabulary padding differs between TP degrees: padded rows are zero in every plan.
    if (t.valid_rows > 0 && global_row(t, i) >= t.valid_rows) {
      out[i] = 0.0f;
      continue;
    }
    const int64_t gi = global_flat_index(t, i);
    if (gi >= static_cast<int64_t>(g.data.size()))  // callers compare the global shapes first
      throw std::logic_error("checkpoint tensor " + t.name + " is smaller than this plan needs");
    out[i] = g.data[static_cast<size_t>(gi)];
  }
}

}  // namespace parallax::exec
