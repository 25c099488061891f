#include <fstream>
#include <sstream>
#include <string>

#include "parallax/calibration/cpu_microbench.hpp"
#include "parallax/core/error.hpp"

namespace parallax::calib {

namespace {

const char* kCacheDir = "/sys/devices/system/cpu/cpu0/cache";

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!in || !std::getline(in, s)) throw InputError(path, "$", "cannot read the cache description");
  return s;
}

// "1024K", "32768K", "2M" (sysfs cache size).
size_t parse_size(const std::string& path, const std::string& s) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    throw InputError(path, "$", "not a cache size (got \"" + s + "\")");
  }
  const std::string unit = s.substr(used);
  if (unit == "K") return static_cast<size_t>(v) << 10;
  if (unit == "M") return static_cast<size_t>(v) << 20;
  if (unit.empty()) return static_cast<size_t>(v);
  throw InputError(path, "$", "unknown size unit (got \"" + s + "\")");
}

// CPUs in a sysfs list such as "0-1" or "0,2,4-7".
int count_cpus(const std::string& list) {
  int n = 0;
  std::stringstream in(list);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t dash = part.find('-');
    n += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
  }
  return n;
}

std::string mib(size_t b) {
  std::ostringstream s;
  s << static_cast<double>(b) / (1 << 20) << " MiB";
  return s.str();
}

}  // namespace

CacheSizes read_cache_sizes() {
  CacheSizes c;
  int llc_level = 0, private_level = 0;
  for (int i = 0;; ++i) {
    const std::string dir = std::string(kCacheDir) + "/index" + std::to_string(i);
    if (!std::ifstream(dir + "/level")) {
      if (i == 0) throw InputError(dir + "/level", "$", "cannot read the cache description");
      break;
    }
    if (read_line(dir + "/type") == "Instruction") continue;
    const int level = std::stoi(read_line(dir + "/level"));
    const size_t size = parse_size(dir + "/size", read_line(dir + "/size"));
    const int cpus = count_cpus(read_line(dir + "/shared_cpu_list"));
    if (level > llc_level) llc_level = level, c.llc_bytes = size, c.llc_cpus = cpus;
    if (cpus == 1 && level > private_level) private_level = level, c.private_bytes = size;
  }
  if (c.private_bytes == 0) c.private_bytes = c.llc_bytes;  // no private level: all shared
  std::ostringstream d;
  d << "L" << private_level << " " << mib(c.private_bytes) << " per core, L" << llc_level << " "
    << mib(c.llc_bytes) << " shared by " << c.llc_cpus << " cpu(s)";
  c.description = d.str();
  return c;
}

}  // namespace parallax::calib
