#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core_test_util.hpp"
#include "parallax/core/atomic_file.hpp"

namespace parallax::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& tag) {
  const fs::path dir =
      fs::temp_directory_path() / ("parallax_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("atomic file: writes, replaces, leaves no temp file", "[core][atomic]") {
  const fs::path dir = fresh_dir("atomic");
  const fs::path out = dir / "plan.json";
  write_file_atomic(out.string(), "first\n");
  CHECK(slurp(out) == "first\n");
  write_file_atomic(out.string(), "second");
  CHECK(slurp(out) == "second");
  write_file_atomic(out.string(), "");
  CHECK(slurp(out).empty());
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

TEST_CASE("atomic file: a missing directory throws and leaves nothing", "[core][atomic]") {
  const fs::path dir = fresh_dir("atomic_missing");
  const fs::path out = dir / "no-such-dir" / "plan.json";
  require_input_error([&] { write_file_atomic(out.string(), "x"); }, "--out",
                      {out.string(), "cannot write: No such file or directory"});
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST_CASE("atomic file: a directory in the way throws and leaves no temp file", "[core][atomic]") {
  const fs::path dir = fresh_dir("atomic_dir");
  const fs::path out = dir / "taken";
  fs::create_directory(out);
  require_input_error([&] { write_file_atomic(out.string(), "x"); }, "--out", {"cannot write"});
  CHECK(fs::is_directory(out));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

}  // namespace parallax::test
