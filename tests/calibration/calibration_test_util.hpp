#pragma once
// Shared by the importer tests: the samples in tests/data, edits of them, and a check that bad
// input is rejected with a one-line InputError naming the place and the rule.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>

#include "parallax/core/error.hpp"

namespace parallax::test {

inline std::string read_data(const std::string& name) {
  std::ifstream in(std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// 1-based number of the line holding the first occurrence of needle.
inline size_t line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  size_t line = 1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

// text with the first occurrence of from replaced by to (which must exist).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// Requires f to throw InputError at `path` whose one-line message contains every word.
inline void require_input_error(const std::function<void()>& f, const std::string& path,
                                std::initializer_list<std::string> words) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO("message: " << what);
    CHECK(e.path() == path);
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.rfind(e.source() + ": " + e.path() + ": ", 0) == 0);
    for (const std::string& w : words) CHECK_THAT(what, Catch::Contains(w));
    return;
  }
  FAIL("no InputError thrown (expected one at " << path << ")");
}

}  // namespace parallax::test
