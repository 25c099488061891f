// Checks the sanitizer suite's own leak checking (scripts/test-sanitize, cmake/Sanitize.cmake).
//
//   lsan_probe dtls MODULE   dlopen MODULE and place its dynamic TLS block at 16 mod 4096
//   lsan_probe leak          leak one allocation of 4242 bytes
//   lsan_probe mpi-leak      the same between MPI_Init and MPI_Finalize (run under mpirun)
//
// "dtls" reproduces, on purpose, what made LeakSanitizer's tracer crash in 4-rank MPI tests
// (issue 19): GCC 12's sanitizer runtime (LLVM's before 17), intercepting __tls_get_addr, takes
// a dynamic TLS block whose address is 16 mod 4096 for one with a 16-byte header (Google's old
// __signal_safe_memalign) and reads its bounds from the 16 bytes before it. With glibc >= 2.25
// those bytes belong to malloc (here ASan's chunk header), so the leak check scans a garbage
// range and its tracer dies of SIGSEGV. Where the block lands depends only on how many
// allocations of its size class came first, so a machine either always or never hits it. The
// exit code says whether the placement worked (3: it did not); the leak check decides the rest.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// The block glibc mallocs for a 4-byte thread-local and a malloc(4) share ASan's size class.
// With the quarantine off (quarantine_size_mb=0 and thread_local_quarantine_size_kb=0, as its
// tests set), a freed chunk goes back to the allocator's per-thread cache, which
// hands out the last freed first: free eight chunks of that class at 16 mod 4096 and the next
// eight such mallocs (glibc's own small allocations on the way, then the TLS block) get them.
int place_dtls_block(const char* module) {
  void* handle = dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "lsan_probe: dlopen %s: %s\n", module, dlerror());
    return 3;
  }
  auto address = reinterpret_cast<void* (*)()>(dlsym(handle, "probe_tls_address"));
  if (!address) {
    std::fprintf(stderr, "lsan_probe: %s has no probe_tls_address\n", module);
    return 3;
  }
  constexpr size_t kSlots = 8;
  std::vector<void*> kept, slots;
  kept.reserve(1 << 16);
  slots.reserve(kSlots);
  while (slots.size() < kSlots && kept.size() < kept.capacity()) {
    void* p = std::malloc(4);
    (reinterpret_cast<uintptr_t>(p) % 4096 == 16 ? slots : kept).push_back(p);
  }
  for (void* p : slots) std::free(p);
  const auto tls = reinterpret_cast<uintptr_t>(address());  // glibc allocates the block here
  for (void* p : kept) std::free(p);
  std::printf("lsan_probe: dynamic TLS block at %#lx (%lu mod 4096)\n",
              static_cast<unsigned long>(tls), static_cast<unsigned long>(tls % 4096));
  return tls % 4096 == 16 ? 0 : 3;
}

// Allocated on a thread that is joined before the check, so no stale copy of the pointer is
// left on a stack LeakSanitizer scans.
void leak_one() {
  std::thread([] {
    void* volatile p = std::malloc(4242);
    std::memset(p, 1, 4242);
    std::printf("lsan_probe: leaked 4242 bytes\n");
  }).join();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "dtls" && argc == 3) return place_dtls_block(argv[2]);
  if (mode == "leak") {
    leak_one();
    return 0;
  }
  if (mode == "mpi-leak") {
    MPI_Init(&argc, &argv);
    leak_one();
    MPI_Finalize();
    return 0;
  }
  std::fprintf(stderr, "usage: lsan_probe dtls MODULE | leak | mpi-leak\n");
  return 2;
}
