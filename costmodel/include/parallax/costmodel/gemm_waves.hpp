#pragma once
// Wave quantization of a GEMM: cuBLAS computes C[M,N] in output tiles of the GPU's gemm_tile, one
// tile per SM at a time, so a GEMM of T tiles runs ceil(T / sm_count) waves, and a partly filled
// last wave takes as long as a full one (NVIDIA, Matrix Multiplication Background User's Guide,
// DU-09799-001, 2023, sections 3.1 tile quantization and 3.2 wave quantization).
#include "parallax/core/gpu_spec.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax {

// Useful over scheduled tile area: batch*M*N / (waves * sm_count * tile_m * tile_n) with
// waves = ceil(batch * ceil(M/tile_m) * ceil(N/tile_n) / sm_count), the better of the tile's two
// orientations (cuBLAS has both, e.g. 256x128 and 128x256). In (0, 1]; 1 when the GPU gives no
// tile or no SM count (CPU devices).
double wave_efficiency(const GemmShape& g, const GpuSpec& gpu);

}  // namespace parallax
