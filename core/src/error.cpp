#include "parallax/core/error.hpp"

#include <utility>

namespace parallax {
namespace {

// The CLI prints what() as one line, so control characters from user text (a key or a string
// value quoted in the rule) are escaped rather than allowed to break the line.
std::string one_line(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

InputError::InputError(std::string source, std::string path, std::string rule)
    : std::runtime_error(one_line(source + ": " + path + ": " + rule)),
      source_(std::move(source)),
      path_(std::move(path)),
      rule_(std::move(rule)) {}

}  // namespace parallax
