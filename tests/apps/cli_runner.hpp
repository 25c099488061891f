#pragma once
// Runs the real `parallax` binary (PARALLAX_BIN, a compile definition) with arguments and
// captures exit code, stdout and stderr. Shared by the CLI test binaries.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

namespace parallax::test {

struct CliResult {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Newlines in s: how many lines a command printed (one-line errors are asserted with it).
inline size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

inline CliResult run_cli(const std::string& args) {
  // Unique per process and call: ctest runs test cases in parallel processes.
  static int calls = 0;
  const std::string err_path = (std::filesystem::temp_directory_path() /
                                ("parallax_test_stderr_" + std::to_string(getpid()) + "_" +
                                 std::to_string(calls++) + ".txt"))
                                   .string();
  const std::string cmd = std::string(PARALLAX_BIN) + " " + args + " 2>" + err_path;
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_path);
  r.err = std::string(std::istreambuf_iterator<char>(f), {});
  std::filesystem::remove(err_path);
  return r;
}

}  // namespace parallax::test
