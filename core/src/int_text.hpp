#pragma once
// An integer as text, for the error messages of core's readers and rules.
#include <cstdint>
#include <string>

namespace parallax::detail {

inline std::string n(int64_t x) { return std::to_string(x); }

}  // namespace parallax::detail
