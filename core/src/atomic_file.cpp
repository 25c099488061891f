#include "parallax/core/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "parallax/core/error.hpp"

namespace parallax {

// rename() within one directory is atomic on POSIX, so a reader sees the old file or the whole
// new one, never a half-written file (e.g. a plan being written while an executor starts).
namespace {

// err is taken by the caller before remove(), which may change errno.
[[noreturn]] void fail_write(const std::string& path, const std::string& flag, const std::string& temp,
                             int err) {
  std::remove(temp.c_str());
  throw InputError(path, flag, "cannot write: " + std::generic_category().message(err));
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text, const std::string& flag) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const auto fail = [&](int err) { fail_write(path, flag, temp, err); };
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) fail(errno);
  if (std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
    const int err = errno;
    std::fclose(file);
    fail(err);
  }
  if (std::fclose(file) != 0) fail(errno);  // buffered data is written (and may fail) here
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace parallax
