#pragma once
// Line and token scanning shared by the log importers (private to parallax_calibration).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax::calib::text_scan {

// The lines of text without their "\n" / "\r\n" terminators; line i is line number i + 1.
std::vector<std::string_view> split_lines(std::string_view text);

// A whitespace-separated word and where it starts in its line.
struct Word {
  std::string_view text;
  size_t pos = 0;
};
std::vector<Word> split_words(std::string_view line);

std::string_view trim(std::string_view s);
bool is_blank(std::string_view s);

// The whole of s as a number (no leading '+', no trailing characters); nullopt otherwise.
// Accepts "nan" and "inf": callers that need a finite value check it.
std::optional<double> parse_double(std::string_view s);
std::optional<int64_t> parse_int(std::string_view s);

// "line 42"
std::string line_path(size_t line_number);
// "lines 1-120" (or "line 1"), for a rule about the whole file.
std::string all_lines_path(size_t line_count);
// s quoted for an error message, cut to 40 characters.
std::string quoted(std::string_view s);

}  // namespace parallax::calib::text_scan
