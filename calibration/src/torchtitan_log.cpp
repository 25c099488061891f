// TorchTitan training log -> TorchTitanLog. See torchtitan_log.hpp.
#include "parallax/calibration/torchtitan_log.hpp"

#include <cmath>
#include <optional>
#include <string_view>

#include "parallax/core/error.hpp"
#include "text_scan.hpp"

namespace parallax::calib {
namespace {

// The line without ANSI escapes ("\x1b[31m", TorchTitan's colours).
std::string plain(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;  // up to the final byte
      continue;
    }
    out += line[i];
  }
  return out;
}

// The training step of a "step: N" line (not "validate step: N"), or none.
std::optional<int64_t> step_of(const std::string& line) {
  const size_t at = line.find("step:");
  if (at == std::string::npos) return std::nullopt;
  if (at >= 9 && line.compare(at - 9, 9, "validate ") == 0) return std::nullopt;
  const std::vector<text_scan::Word> w = text_scan::split_words(std::string_view(line).substr(at + 5));
  if (w.empty()) return std::nullopt;
  return text_scan::parse_int(w.front().text);
}

// The value after "key:" up to the next space, commas (thousands) removed.
std::optional<std::string> field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + ":");
  if (at == std::string::npos) return std::nullopt;
  const std::vector<text_scan::Word> w = text_scan::split_words(std::string_view(line).substr(at + key.size() + 1));
  if (w.empty()) return std::string();
  std::string v;
  for (char c : w.front().text)
    if (c != ',') v += c;
  return v;
}

}  // namespace

bool looks_like_torchtitan_log(const std::string& text) {
  for (std::string_view l : text_scan::split_lines(text)) {
    const std::string line = plain(l);
    if (step_of(line) && field(line, "tps")) return true;
  }
  return false;
}

TorchTitanLog parse_torchtitan_log(const std::string& text, const std::string& source) {
  const std::vector<std::string_view> lines = text_scan::split_lines(text);
  if (text_scan::is_blank(text)) throw InputError(source, "file", "is empty: expected TorchTitan step lines");
  TorchTitanLog log;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = plain(lines[i]);
    const std::optional<int64_t> step = step_of(line);
    if (!step) continue;
    const std::string where = text_scan::line_path(i + 1);
    const std::optional<std::string> tps = field(line, "tps");
    if (!tps) throw InputError(source, where, "a step line needs tps (tokens per second per GPU)");
    const std::optional<double> v = text_scan::parse_double(*tps);
    if (!v || !std::isfinite(*v) || *v <= 0)
      throw InputError(source, where + ", tps", "must be a positive number (got " + text_scan::quoted(*tps) + ")");
    log.steps.push_back({*step, *v, static_cast<int64_t>(i + 1)});
  }
  if (log.steps.empty())
    throw InputError(source, text_scan::all_lines_path(lines.size()), "no TorchTitan step lines (\"step: N ... tps: T\")");
  return log;
}

}  // namespace parallax::calib
