#include "parallax/kernels/gemm_path.hpp"

#include <cblas.h>
#include <omp.h>

#include <fstream>
#include <sstream>

namespace parallax::kernels {

std::string wanted_openblas_coretype() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    bool avx2 = false, avx512f = false;
    while (words >> w) {
      avx2 = avx2 || w == "avx2";
      avx512f = avx512f || w == "avx512f";
    }
    if (avx512f) return "SkylakeX";
    if (avx2) return "Haswell";
    return "";
  }
  return "";
}

void set_compute_threads(int threads) {
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
}

std::string openblas_core_name() { return openblas_get_corename(); }

std::string gemm_path_description() {
  std::ostringstream s;
  s << "cblas_sgemm via " << openblas_get_config() << "; core " << openblas_get_corename()
    << "; " << openblas_get_num_threads() << " BLAS threads";
  return s.str();
}

}  // namespace parallax::kernels
