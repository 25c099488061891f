#pragma once
// A tensor shape as text, "[a, b]", for the checkpoint readers' messages.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::exec::detail {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace parallax::exec::detail
