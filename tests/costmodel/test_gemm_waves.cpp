// Wave quantization of GEMMs, derived by hand: tiles of the GPU's gemm_tile scheduled one per SM,
// a partial last wave as long as a full one (NVIDIA Matrix Multiplication Background User's Guide,
// section 3.2), and the cost model charging it on top of the fitted curve.
#include <catch2/catch.hpp>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/gemm_waves.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/profile.hpp"

using namespace parallax;

namespace {

// An A100 as its preset gives it: 108 SMs, 256 x 128 tiles.
GpuSpec a100_tiles() {
  GpuSpec g;
  g.sm_count = 108;
  g.gemm_tile_m = 256;
  g.gemm_tile_n = 128;
  return g;
}

Op linear_gemm(double m, double n, double k) {
  Op op;
  op.op_class = "gemm";
  op.kind = OpKind::gemm;
  op.shape = {1, m, n, k};
  op.flops = 2 * m * n * k;
  op.bytes = 2 * (m * k + k * n + m * n);
  return op;
}

}  // namespace

TEST_CASE("a GEMM of exactly one full wave of tiles wastes nothing") {
  // 6912 = 27 * 256 rows, 512 = 4 * 128 columns: 108 tiles on 108 SMs.
  CHECK(wave_efficiency({1, 6912, 512, 4096}, a100_tiles()) == Approx(1.0));
}

TEST_CASE("one column past a full wave costs a second, almost empty, wave") {
  // 256x128: 27 * ceil(513/128) = 135 tiles; 128x256: 54 * ceil(513/256) = 162 tiles. Both need
  // two waves of 108 tiles of 32768 elements, for 6912 * 513 useful elements.
  const double useful = 6912.0 * 513.0;
  CHECK(wave_efficiency({1, 6912, 513, 4096}, a100_tiles()) ==
        Approx(useful / (2 * 108 * 32768.0)));
}

TEST_CASE("a GEMM of fewer tiles than SMs leaves SMs idle") {
  // 2048 x 1024: 8 * 8 = 64 tiles of 256x128 (or 16 * 4 of 128x256): one wave, 44 SMs idle.
  CHECK(wave_efficiency({1, 2048, 1024, 8192}, a100_tiles()) ==
        Approx(2048.0 * 1024.0 / (108 * 32768.0)));
}

TEST_CASE("the better orientation of the tile is taken") {
  // 128 x 27648 (108 * 256): 128x256 tiles fit it in 108 tiles, one full wave; 256x128 would pad
  // the rows to 256 and need 216 tiles, two waves at half. The first is taken: 1.
  CHECK(wave_efficiency({1, 128, 27648, 4096}, a100_tiles()) == Approx(1.0));
  // The same shape transposed takes the 256x128 orientation's twin and is as full.
  CHECK(wave_efficiency({1, 27648, 128, 4096}, a100_tiles()) == Approx(1.0));
}

TEST_CASE("a batched GEMM's tiles share the waves") {
  // 216 products of 128 x 128: one tile each (half of a 256x128 tile), 216 tiles = 2 full waves.
  CHECK(wave_efficiency({216, 128, 128, 64}, a100_tiles()) ==
        Approx(216 * 128.0 * 128.0 / (2 * 108 * 32768.0)));
}

TEST_CASE("a GPU without SM count or tile charges no quantization") {
  GpuSpec g = a100_tiles();
  g.gemm_tile_m = 0;
  CHECK(wave_efficiency({1, 2048, 1024, 8192}, g) == 1.0);
  g = a100_tiles();
  g.sm_count = 0;
  CHECK(wave_efficiency({1, 2048, 1024, 8192}, g) == 1.0);
}

TEST_CASE("the GPU presets give the tile of the kernels cuBLAS runs on them") {
  CHECK(load_gpu("a100-80gb").gemm_tile_m * load_gpu("a100-80gb").gemm_tile_n == 256 * 128);
  CHECK(load_gpu("h100-sxm").gemm_tile_m * load_gpu("h100-sxm").gemm_tile_n == 128 * 256);
  CHECK_FALSE(load_gpu("h100-sxm").gemm_tile_source.empty());
  CHECK(load_gpu("cpu-core").gemm_tile_m == 0);
}

TEST_CASE("a GEMM's time is the curve's at full waves divided by the wave efficiency") {
  // The same compute-bound GEMM on the A100 preset with and without its tile: the ratio of times is
  // the wave efficiency derived by hand, 2048 * 1024 / (108 * 32768).
  const GpuSpec with = load_gpu("a100-80gb");
  GpuSpec without = with;
  without.gemm_tile_m = without.gemm_tile_n = 0;
  const EfficiencyProfile prof = load_profile("a100-megatron");
  JobSpec j;
  j.framework = "megatron-lm";
  const Op op = linear_gemm(2048, 1024, 8192);
  const double eff = prof.gemm_efficiency(1024);
  CHECK(op_time_s(op, without, j, prof) == Approx(op.flops / (with.peak(Dtype::bf16) * eff)));
  CHECK(op_time_s(op, with, j, prof) ==
        Approx(op_time_s(op, without, j, prof) * 108 * 32768.0 / (2048.0 * 1024.0)));
}
