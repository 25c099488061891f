#include "parallax/executor/safetensors.hpp"

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

uint64_t fnv1a64(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

namespace {

json shard_json(const ParamTensor& t) {
  json segs = json::array();
  for (const auto& s : t.segments) segs.push_back({s.global_start, s.local_start, s.length});
  return {{"global_shape", t.global_shape}, {"dim", t.shard_dim}, {"segments", segs}};
}

}  // namespace

void write_shard_file(const std::string& path, const ShardFile& f) {
  json header = json::object();
  json meta = json::object();
  for (const auto& [k, v] : f.metadata) meta[k] = v;
  std::string data;
  for (const auto& e : f.tensors) {
    const size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(e.data.data()), e.data.size() * sizeof(float));
    header[e.shard.name] = {{"dtype", "F32"},
                            {"shape", e.shard.local_shape},
                            {"data_offsets", {begin, data.size()}}};
    meta["shard:" + e.shard.name] = shard_json(e.shard).dump();
  }
  meta["checksum_fnv1a64"] = std::to_string(fnv1a64(data.data(), data.size()));
  header["__metadata__"] = meta;
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  const uint64_t n = h.size();
  write_file_durably(path, {std::string_view(reinterpret_cast<const char*>(&n), 8), h, data});
}

ShardFile read_shard_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "file", "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return InputError(path, "safetensors", why); };
  if (bytes.size() < 8) throw bad("truncated (no header length)");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) throw bad("truncated (header longer than the file)");
  json header;
  try {
    header = json::parse(bytes.substr(8, n));
  } catch (const std::exception&) {
    throw bad("malformed header");
  }
  const std::string data = bytes.substr(8 + n);
  ShardFile f;
  if (!header.contains("__metadata__")) throw bad("no __metadata__");
  for (auto& [k, v] : header["__metadata__"].items()) f.metadata[k] = v.get<std::string>();
  const auto sum = f.metadata.find("checksum_fnv1a64");
  if (sum == f.metadata.end()) throw bad("no checksum");
  if (sum->second != std::to_string(fnv1a64(data.data(), data.size())))
    throw bad("checksum mismatch (corrupted or truncated)");
  for (auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    ShardEntry e;
    e.shard.name = name;
    e.shard.local_shape = v.at("shape").get<std::vector<int64_t>>();
    const auto off = v.at("data_offsets").get<std::vector<size_t>>();
    if (off.size() != 2 || off[1] < off[0] || off[1] > data.size()) throw bad(name + ": bad offsets");
    e.data.resize((off[1] - off[0]) / sizeof(float));
    if (static_cast<int64_t>(e.data.size()) != e.shard.numel()) throw bad(name + ": size/shape mismatch");
    std::memcpy(e.data.data(), data.data() + off[0], off[1] - off[0]);
    const auto sm = f.metadata.find("shard:" + name);
    if (sm == f.metadata.end()) throw bad(name + ": no shard metadata");
    const json s = json::parse(sm->second);
    e.shard.global_shape = s.at("global_shape").get<std::vector<int64_t>>();
    e.shard.shard_dim = s.at("dim").get<int>();
    for (const auto& seg : s.at("segments"))
      e.shard.segments.push_back({seg[0].get<int64_t>(), seg[1].get<int64_t>(), seg[2].get<int64_t>()});
    f.tensors.push_back(std::move(e));
  }
  return f;
}

std::map<std::string, GlobalTensor> assemble(const std::vector<ShardFile>& files,
                                             const std::string& prefix) {
  std::map<std::string, GlobalTensor> out;
  for (const auto& f : files)
    for (const auto& e : f.tensors) {
      if (e.shard.name.rfind(prefix, 0) != 0) continue;
      GlobalTensor& g = out[e.shard.name];
      if (g.shape.empty()) {
        g.shape = e.shard.global_shape;
        int64_t n = 1;
        for (int64_t d : g.shape) n *= d;
        g.data.assign(static_cast<size_t>(n), 0.0f);
        g.filled.assign(static_cast<size_t>(n), false);
      }
      for (int64_t i = 0; i < e.shard.numel(); ++i) {
        const auto gi = static_cast<size_t>(global_flat_index(e.shard, i));
        g.data[gi] = e.data[static_cast<size_t>(i)];
        g.filled[gi] = true;
      }
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
    if (gi >= static_cast<int64_t>(g.data.size()))
      throw std::runtime_error("checkpoint tensor " + t.name + " is smaller than this plan needs");
    out[i] = g.data[static_cast<size_t>(gi)];
  }
}

}  // namespace parallax::exec
