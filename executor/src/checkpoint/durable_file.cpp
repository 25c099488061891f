#include "durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "parallax/core/error.hpp"

namespace parallax::exec {

void write_file_durably(const std::string& path, const std::vector<std::string_view>& parts,
                        const std::string& field) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const char* what, int fd) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    std::remove(tmp.c_str());
    throw InputError(path, field, std::string(what) + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create the file", -1);
  for (std::string_view p : parts) {
    while (!p.empty()) {
      const ssize_t n = ::write(fd, p.data(), p.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;
        fail("write failed", fd);
      }
      p.remove_prefix(static_cast<size_t>(n));
    }
  }
  if (::fsync(fd) != 0) fail("fsync failed", fd);
  if (::close(fd) != 0) fail("close failed", -1);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename failed", -1);
}

}  // namespace parallax::exec
