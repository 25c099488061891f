// The cache sizes the calibrate flush is sized from: read from a directory laid out as Linux's
// /sys/devices/system/cpu/cpu0/cache, and from CPUID (sysconf) where that directory is missing, as
// on Firecracker guests. Expected values are the sizes the fixture writes, or those sysconf reports.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "parallax/calibration/cache_sizes.hpp"
#include "parallax/core/error.hpp"

using namespace parallax;
namespace fs = std::filesystem;

namespace {

struct CacheDir {
  fs::path root = fs::temp_directory_path() / ("parallax_cache_" + std::to_string(getpid()));
  CacheDir() { fs::remove_all(root); }
  ~CacheDir() { fs::remove_all(root); }
  void index(int i, int level, const std::string& type, const std::string& size, const std::string& cpus) const {
    const fs::path d = root / ("index" + std::to_string(i));
    fs::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
    std::ofstream(d / "shared_cpu_list") << cpus << "\n";
  }
};

}  // namespace

TEST_CASE("cache sizes: the sysfs description gives the private level and the shared last level") {
  CacheDir dir;
  dir.index(0, 1, "Data", "48K", "0");
  dir.index(1, 1, "Instruction", "32K", "0");
  dir.index(2, 2, "Unified", "2048K", "0");
  dir.index(3, 3, "Unified", "32M", "0-3,8,10-11");
  const calib::CacheSizes c = calib::read_cache_sizes(dir.root.string());
  CHECK(c.private_bytes == 2048u * 1024);
  CHECK(c.llc_bytes == 32u * 1024 * 1024);
  CHECK(c.llc_cpus == 7);
  CHECK(c.description == "L2 2 MiB per core, L3 32 MiB shared by 7 cpu(s)");
}

TEST_CASE("cache sizes: with no private level the last level is named as the private one") {
  CacheDir dir;
  dir.index(0, 2, "Unified", "1024K", "0-1");
  const calib::CacheSizes c = calib::read_cache_sizes(dir.root.string());
  CHECK(c.private_bytes == 1024u * 1024);
  CHECK(c.llc_cpus == 2);
  CHECK(c.description == "L2 1 MiB per core, L2 1 MiB shared by 2 cpu(s)");
}

TEST_CASE("cache sizes: a size in an unknown unit is one error naming the file") {
  CacheDir dir;
  dir.index(0, 3, "Unified", "32G", "0-1");
  REQUIRE_THROWS_AS(calib::read_cache_sizes(dir.root.string()), InputError);
  CHECK_THROWS_WITH(calib::read_cache_sizes(dir.root.string()), Catch::Contains("index0/size"));
}

TEST_CASE("cache sizes: without the sysfs directory they come from CPUID, and the description says so") {
  const fs::path missing = fs::temp_directory_path() / ("parallax_no_cache_" + std::to_string(getpid()));
  fs::remove_all(missing);
  long llc = 0, l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  for (const long s : {l1, l2, sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL4_CACHE_SIZE)})
    if (s > 0) llc = s;
  if (llc <= 0) {
    // This machine's CPUID reports no cache either: one error naming the directory.
    REQUIRE_THROWS_AS(calib::read_cache_sizes(missing.string()), InputError);
    return;
  }
  const calib::CacheSizes c = calib::read_cache_sizes(missing.string());
  CHECK(c.llc_bytes == static_cast<size_t>(llc));
  CHECK(c.private_bytes == static_cast<size_t>(l2 > 0 ? l2 : l1 > 0 ? l1 : llc));
  CHECK(c.description.find("CPUID through sysconf: no " + missing.string()) != std::string::npos);
}
