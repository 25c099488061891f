#include "topo_values.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "parallax/core/error.hpp"

namespace parallax::cli {
namespace {

[[noreturn]] void fail(const std::string& flag, const std::string& rule, const std::string& text) {
  throw InputError("command line", flag, rule + " (got \"" + text + "\")");
}

int64_t parse_rank(const std::string& flag, const std::string& part, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(part.c_str(), &end, 10);
  if (part.empty() || end != part.c_str() + part.size() || v < 0 || v > (1LL << 40))
    fail(flag, "must be ranks like 0-63 or 0,8,16 (non-negative integers)", text);
  return static_cast<int64_t>(v);
}

}  // namespace

std::vector<int64_t> parse_rank_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const size_t dash = part.find('-');
    const int64_t lo = parse_rank(flag, part.substr(0, dash), text);
    const int64_t hi = dash == std::string::npos ? lo : parse_rank(flag, part.substr(dash + 1), text);
    if (hi < lo) fail(flag, "a range must go up (first-last)", text);
    if (hi - lo > 10000000) fail(flag, "at most 10^7 ranks", text);
    for (int64_t r = lo; r <= hi; ++r) {
      if (!seen.insert(r).second) fail(flag, "rank " + std::to_string(r) + " is listed twice", text);
      out.push_back(r);
    }
  }
  if (out.empty()) fail(flag, "must list at least one rank", text);
  return out;
}

double parse_bytes(const std::string& flag, const std::string& text) {
  const std::string rule = "must be a size in bytes > 0, optionally with K, M or G (powers of 1024)";
  if (text.empty()) fail(flag, rule, text);
  double scale = 1;
  std::string num = text;
  switch (num.back()) {
    case 'K': case 'k': scale = 1024.0; break;
    case 'M': case 'm': scale = 1024.0 * 1024; break;
    case 'G': case 'g': scale = 1024.0 * 1024 * 1024; break;
    default: break;
  }
  if (scale != 1) num.pop_back();
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(v) || v <= 0 || v * scale > 1e15)
    fail(flag, rule, text);
  return v * scale;
}

}  // namespace parallax::cli
