#pragma once
// Shared by the libFuzzer targets: the input as text or as a file, and the one outcome bad input
// may have. A parser must return or throw parallax::InputError (the one-line error the CLI
// prints with exit code 2); any other exception escapes to libFuzzer as a finding, as do
// crashes, leaks, hangs and ASan/UBSan reports.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"

namespace parallax::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Parsers that read files get the input through one file per fuzzing process.
inline std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
  const std::string path = "/tmp/parallax-fuzz-" + std::to_string(::getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

template <class F>
void expect_input_error_only(F&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

// JSON text -> object reader -> parse(reader).
template <class F>
void json_object(const uint8_t* data, size_t size, F&& parse) {
  expect_input_error_only([&] {
    const nlohmann::json j = parse_json_text(text(data, size), "fuzz");
    JsonObjectReader r(j, "fuzz");
    parse(r);
  });
}

}  // namespace parallax::fuzz
