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

#include <chrono>
#include <vector>

namespace parallax::kernels {

double measure_sgemm_peak_flop_per_s(int64_t n, int reps) {
  const auto nn = static_cast<size_t>(n * n);
  std::vector<float> a(nn, 0.5f), b(nn, 0.25f), c(nn, 0.0f);
  const auto N = static_cast<blasint>(n);
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, a.data(), N, b.data(), N,
                0.0f, c.data(), N);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(n * n * n) / s);
  }
  return best;
}

}  // namespace parallax::kernels
