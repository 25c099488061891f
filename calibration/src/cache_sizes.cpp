#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "parallax/calibration/cache_sizes.hpp"
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

// "L2 1 MiB per core, L3 32 MiB shared by 2 cpu(s)": the levels and sizes the caller settled on.
std::string describe(int private_level, int llc_level, const CacheSizes& c) {
  std::ostringstream d;
  d << "L" << private_level << " " << mib(c.private_bytes) << " per core, L" << llc_level << " "
    << mib(c.llc_bytes) << " shared by " << c.llc_cpus << " cpu(s)";
  return d.str();
}

// Without a sysfs cache description (virtual machines whose kernel exposes none, as Firecracker
// guests): the sizes the C library reads from CPUID (sysconf _SC_LEVEL*_CACHE_SIZE). These carry
// no sharing, so the private level is taken as L2 (L1 where no L2 is reported; the last level where
// neither is) and the last level as shared by every online CPU of this machine; the description
// says so. L2 is private on most x86 cores, though Intel's E-core clusters share one among four.
CacheSizes cpuid_cache_sizes(const std::string& sysfs_path) {
  CacheSizes c;
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
             l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l4 = sysconf(_SC_LEVEL4_CACHE_SIZE);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int llc_level = 0;
  for (const auto& [level, size] : {std::pair{1, l1}, {2, l2}, {3, l3}, {4, l4}})
    if (size > 0) llc_level = level, c.llc_bytes = static_cast<size_t>(size);
  if (llc_level == 0 || cpus < 1)
    throw InputError(sysfs_path, "$", "cannot read the cache description (and CPUID reports no cache size)");
  const int private_level = l2 > 0 ? 2 : l1 > 0 ? 1 : llc_level;
  c.private_bytes = private_level == 2 ? static_cast<size_t>(l2)
                    : private_level == 1 ? static_cast<size_t>(l1)
                                         : c.llc_bytes;
  c.llc_cpus = llc_level == private_level ? 1 : static_cast<int>(cpus);
  c.description = describe(private_level, llc_level, c) + " (CPUID through sysconf: no " +
                  sysfs_path + "; the sharing is not reported, taken as every online cpu)";
  return c;
}

}  // namespace

CacheSizes read_cache_sizes() { return read_cache_sizes(kCacheDir); }

CacheSizes read_cache_sizes(const std::string& cache_dir) {
  CacheSizes c;
  int llc_level = 0, private_level = 0;
  for (int i = 0;; ++i) {
    const std::string dir = cache_dir + "/index" + std::to_string(i);
    if (!std::ifstream(dir + "/level")) {
      if (i == 0) return cpuid_cache_sizes(cache_dir);
      break;
    }
    if (read_line(dir + "/type") == "Instruction") continue;
    const int level = std::stoi(read_line(dir + "/level"));
    const size_t size = parse_size(dir + "/size", read_line(dir + "/size"));
    const int cpus = count_cpus(read_line(dir + "/shared_cpu_list"));
    if (level > llc_level) llc_level = level, c.llc_bytes = size, c.llc_cpus = cpus;
    if (cpus == 1 && level > private_level) private_level = level, c.private_bytes = size;
  }
  if (c.private_bytes == 0) c.private_bytes = c.llc_bytes, private_level = llc_level;  // all shared
  c.description = describe(private_level, llc_level, c);
  return c;
}

}  // namespace parallax::calib
