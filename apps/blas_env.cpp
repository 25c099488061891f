#include "blas_env.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/kernels/gemm_path.hpp"

namespace parallax::cli {

// OpenBLAS chooses its kernels and libgomp its wait policy when the libraries load, before
// main. To use the core the CPU flags call for (docs/design.md §8) and to keep OpenMP threads from
// spinning against OpenBLAS's own threads (measured: 5-10x slower steps on 2 busy cores), the
// process re-executes itself once with OPENBLAS_CORETYPE and OMP_WAIT_POLICY=passive set.
void reexec_with_openblas_coretype() {
  if (std::getenv("PARALLAX_REEXECUTED") || std::getenv("PARALLAX_NO_REEXEC")) return;
  const std::string core = kernels::wanted_openblas_coretype();
  const bool set_core = !core.empty() && !std::getenv("OPENBLAS_CORETYPE");
  const bool set_wait = !std::getenv("OMP_WAIT_POLICY");
  if (!set_core && !set_wait) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t b = 0; b < all.size();) {
    const size_t e = all.find('\0', b);
    args.push_back(all.substr(b, e - b));
    b = e == std::string::npos ? all.size() : e + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (set_core) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  if (set_wait) setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv("PARALLAX_REEXECUTED", "1", 1);
  execv("/proc/self/exe", argv.data());  // returns only on failure: carry on with the default
}

int run_as_mpi_rank(const std::function<void(int rank)>& body) {
  reexec_with_openblas_coretype();
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    body(rank);
  } catch (const InputError& e) {
    if (rank == 0) std::fprintf(stderr, "parallax: error: %s\n", e.what());
    code = kExitBadInput;
  } catch (const RunFailure& e) {
    if (rank == 0) std::fprintf(stderr, "parallax: error: %s\n", e.what());
    code = kExitRunFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parallax: rank %d: internal error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}

}  // namespace parallax::cli
