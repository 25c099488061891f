#include "text_scan.hpp"

#include <charconv>
#include <system_error>

namespace parallax::calib::text_scan {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<Word> split_words(std::string_view line) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const size_t begin = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > begin) words.push_back({line.substr(begin, i - begin), begin});
  }
  return words;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view s) { return trim(s).empty(); }

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::string line_path(size_t line_number) { return "line " + std::to_string(line_number); }

std::string all_lines_path(size_t line_count) {
  return line_count <= 1 ? "line 1" : "lines 1-" + std::to_string(line_count);
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out(1, '"');
  out.append(s.substr(0, kMax));
  if (s.size() > kMax) out.append("...");
  out.push_back('"');
  return out;
}

}  // namespace parallax::calib::text_scan
