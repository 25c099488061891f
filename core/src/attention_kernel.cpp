// Fused attention kernels as data: reading presets/attention/NAME.json and resolving which
// kernel, with which measurements, a job's stack runs on each GPU architecture.
#include "parallax/core/attention_kernel_io.hpp"

#include <algorithm>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"

namespace parallax {

namespace {

constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;

}  // namespace

bool is_compute_capability(const std::string& a) {
  return a.size() > 2 && a.starts_with("sm") &&
         std::all_of(a.begin() + 2, a.end(), [](char c) { return c >= '0' && c <= '9'; });
}

AttentionKernel read_attention_kernel(JsonObjectReader& r) {
  AttentionKernel k;
  k.name = r.get_string_or("name", "");
  k.source = r.get_string_or("source", "");
  const nlohmann::json& pts = r.raw("points");
  if (!pts.is_array() || pts.empty()) r.fail("points", "must be a non-empty array of objects");
  for (size_t i = 0; i < pts.size(); ++i) {
    JsonObjectReader e(pts[i], r.source(), r.path_of("points") + "[" + std::to_string(i) + "]");
    AttentionKernelPoint p;
    p.arch = e.get_string("arch");
    if (!is_compute_capability(p.arch)) e.fail("arch", "must be a compute capability such as \"sm90\" (got \"" + p.arch + "\")");
    p.head_dim = e.get_int("head_dim", 1, kMaxHeadDim);
    p.seq_len = e.get_int("seq_len", 1, kMaxSeqLen);
    p.forward = e.get_number("forward", 1e-3, 1);
    p.backward = e.get_number("backward", 1e-3, 1);
    if (e.get_string("source").empty()) e.fail("source", "must say where the point is read");
    e.finish();
    for (const AttentionKernelPoint& q : k.points)
      if (q.arch == p.arch && q.head_dim == p.head_dim && q.seq_len == p.seq_len)
        e.fail("seq_len", "point listed twice for the same arch, head_dim and seq_len");
    k.points.push_back(p);
  }
  r.finish();
  return k;
}

void read_stack_attention_kernels(JsonObjectReader& r, std::map<std::string, std::string>& out) {
  JsonObjectReader m = r.object("attention_kernels");
  const nlohmann::json& raw = r.raw("attention_kernels");
  for (auto it = raw.begin(); it != raw.end(); ++it) {
    if (it.key() != "*" && !is_compute_capability(it.key()))
      m.fail(it.key(), "must be a compute capability such as \"sm90\", or \"*\"");
    out[it.key()] = m.get_string(it.key());
    if (out[it.key()].empty()) m.fail(it.key(), "must name an attention kernel preset");
  }
  m.finish();
}

std::vector<AttentionKernel> resolve_attention_kernels(const std::string& job_kernel,
                                                       const StackSpec& stack) {
  if (!job_kernel.empty()) return {load_attention_kernel(job_kernel)};
  std::vector<AttentionKernel> out;
  // Named architectures first, each kernel keeping only the points of its own architecture;
  // then "*", keeping the points of architectures no entry names.
  for (const auto& entry : stack.attention_kernels) {
    const std::string& arch = entry.first;
    if (arch == "*") continue;
    AttentionKernel k = load_attention_kernel(entry.second);
    std::erase_if(k.points, [&arch](const AttentionKernelPoint& p) { return p.arch != arch; });
    out.push_back(std::move(k));
  }
  if (const auto any = stack.attention_kernels.find("*"); any != stack.attention_kernels.end()) {
    AttentionKernel k = load_attention_kernel(any->second);
    std::erase_if(k.points, [&](const AttentionKernelPoint& p) {
      return stack.attention_kernels.contains(p.arch);
    });
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace parallax
