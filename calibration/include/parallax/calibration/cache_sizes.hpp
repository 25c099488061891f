#pragma once
// The data caches of the machine calibrate runs on: the CPU microbenchmarks size the scratch they
// write between timed calls from them, and the CPU profile records them.
#include <cstddef>
#include <string>

namespace parallax::calib {

// This machine's data caches as Linux reports them (/sys/devices/system/cpu/cpu0/cache), or, where
// the kernel has no such description, as CPUID does (sysconf; the description says which).
struct CacheSizes {
  size_t private_bytes = 0;  // the largest cache private to a core (L2 on current x86)
  size_t llc_bytes = 0;      // the last level (L3), shared by llc_cpus cores
  int llc_cpus = 1;
  std::string description;   // "L2 1 MiB per core, L3 32 MiB shared by 2 cpu(s)"
};
// Throws InputError naming the sysfs directory or file when neither reports the sizes.
CacheSizes read_cache_sizes();
// The same from a directory laid out as /sys/devices/system/cpu/cpu0/cache (index<N>/level, type,
// size, shared_cpu_list); CPUID where it has no index0.
CacheSizes read_cache_sizes(const std::string& cache_dir);

}  // namespace parallax::calib
