#include "parallax/costmodel/attention_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace parallax {

namespace {

// y at x on the points (x ascending), linear in log2(x), held at the ends.
double interpolate_log2(const std::map<double, double>& pts, double x) {
  if (x <= pts.begin()->first) return pts.begin()->second;
  if (x >= pts.rbegin()->first) return pts.rbegin()->second;
  const auto hi = pts.upper_bound(x);
  const auto lo = std::prev(hi);
  const double t = std::log2(x / lo->first) / std::log2(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

}  // namespace

const AttentionKernel* attention_kernel_for(const std::vector<AttentionKernel>& kernels,
                                            const std::string& arch) {
  if (arch.empty()) return nullptr;
  for (const AttentionKernel& k : kernels)
    if (std::any_of(k.points.begin(), k.points.end(),
                    [&](const AttentionKernelPoint& p) { return p.arch == arch; }))
      return &k;
  return nullptr;
}

std::optional<double> attention_kernel_efficiency(const AttentionKernel& kernel,
                                                  const std::string& arch, double head_dim,
                                                  double seq_len, bool backward) {
  std::map<double, std::map<double, double>> by_head;  // head_dim -> seq_len -> efficiency
  for (const AttentionKernelPoint& p : kernel.points)
    if (p.arch == arch)
      by_head[static_cast<double>(p.head_dim)][static_cast<double>(p.seq_len)] =
          backward ? p.backward : p.forward;
  if (by_head.empty()) return std::nullopt;
  std::map<double, double> at_seq;  // head_dim -> efficiency at seq_len
  for (const auto& [d, curve] : by_head) at_seq[d] = interpolate_log2(curve, seq_len);
  return interpolate_log2(at_seq, head_dim);
}

double op_attention_kernel_efficiency(const Op& op, const AttentionKernel& kernel,
                                      const std::string& arch) {
  const bool backward = op.phase != Phase::forward && op.phase != Phase::recompute;
  return attention_kernel_efficiency(kernel, arch, op.shape.k, op.shape.m, backward).value_or(0);
}

}  // namespace parallax
