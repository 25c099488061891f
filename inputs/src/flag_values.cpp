// Numbers typed as flags or into GUI fields, read with the rules of JSON input.
#include "parallax/inputs/flag_values.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

[[noreturn]] void fail(const std::string& flag, const std::string& rule, const std::string& text) {
  throw InputError("command line", flag, rule + " (got \"" + text + "\")");
}

}  // namespace

double parse_number(const std::string& flag, const std::string& text, double min, double max) {
  std::ostringstream rule;
  rule << "must be a finite number in [" << min << ", " << max << "]";
  if (text.empty()) fail(flag, rule.str(), text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < min || v > max) {
    fail(flag, rule.str(), text);
  }
  return v;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  const std::string rule =
      "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (text.empty()) fail(flag, rule, text);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE || v < min || v > max) {
    fail(flag, rule, text);
  }
  return static_cast<int64_t>(v);
}

}  // namespace parallax
