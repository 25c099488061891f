#include "parallax/core/gpu_spec.hpp"

#include <charconv>

#include "parallax/core/attention_kernel_io.hpp"

namespace parallax {

std::optional<int> compute_capability_major(const GpuSpec& g) {
  if (!is_compute_capability(g.arch)) return std::nullopt;
  int major_minor = 0;  // "sm90" -> 90: the last digit is the minor version
  const char* digits = g.arch.data() + 2;
  const std::from_chars_result r = std::from_chars(digits, g.arch.data() + g.arch.size(), major_minor);
  if (r.ec != std::errc{}) return std::nullopt;
  return major_minor / 10;
}

}  // namespace parallax
