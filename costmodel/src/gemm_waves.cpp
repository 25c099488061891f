#include "parallax/costmodel/gemm_waves.hpp"

#include <algorithm>
#include <cmath>

namespace parallax {
namespace {

double oriented(const GemmShape& g, double sms, double tile_m, double tile_n) {
  const double tiles = g.batch * std::ceil(g.m / tile_m) * std::ceil(g.n / tile_n);
  const double waves = std::ceil(tiles / sms);
  return g.batch * g.m * g.n / (waves * sms * tile_m * tile_n);
}

}  // namespace

double wave_efficiency(const GemmShape& g, const GpuSpec& gpu) {
  if (gpu.sm_count <= 0 || gpu.gemm_tile_m <= 0 || gpu.gemm_tile_n <= 0) return 1;
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return 1;
  const double sms = static_cast<double>(gpu.sm_count);
  const double tm = static_cast<double>(gpu.gemm_tile_m);
  const double tn = static_cast<double>(gpu.gemm_tile_n);
  return std::max(oriented(g, sms, tm, tn), oriented(g, sms, tn, tm));
}

}  // namespace parallax
