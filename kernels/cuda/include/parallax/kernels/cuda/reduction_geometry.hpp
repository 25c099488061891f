#pragma once
// Launch geometry of the CUDA backend's deterministic reductions, host-only so the default
// suite checks it without a GPU.
//
// Column sums (layernorm/rmsnorm weight gradients, bias backward) over an (N, C) bf16 matrix
// run in two passes. Pass 1: a 2-D grid of blocks, each summing a tile of
// kColumnsPerTile columns over kRowsPerChunk rows (one lane per column, the block's warps
// striding over the rows, then the warps' sums added in warp order) into one fp32 partial per
// (chunk, column). Pass 2: one thread per column adds the chunks' partials in chunk order.
// Every sum has a fixed order, so the result is the same bits on every run and every rank.
// At N = 8192, C = 4096 pass 1 launches 32 x 128 = 4096 blocks (31 per SM of an H100), where
// one thread per column launched 16.
//
// Sums of squares (the gradient norm) likewise: pass 1 gives one double per block (grid-stride
// over at most kMaxSumBlocks blocks, a block reduction, no atomics), pass 2 one block adding the
// partials in order.
#include <algorithm>
#include <cstdint>

namespace parallax::kernels::cuda {

inline constexpr int64_t kColumnsPerTile = 32;   // one warp's lanes
inline constexpr int64_t kRowsPerChunk = 256;    // rows one block sums in pass 1
inline constexpr int64_t kSumBlockThreads = 256;
inline constexpr int64_t kMaxSumBlocks = 1024;

struct ColumnReductionGeometry {
  int64_t column_tiles = 0;  // grid x of pass 1
  int64_t row_chunks = 0;    // grid y of pass 1; partials per column
  int64_t blocks() const { return column_tiles * row_chunks; }
  // fp32 partials of pass 1 for `sums` sums per column (layernorm: weight and bias).
  int64_t partial_floats(int64_t columns, int64_t sums) const { return row_chunks * columns * sums; }
};

inline ColumnReductionGeometry column_reduction_geometry(int64_t rows, int64_t columns) {
  return {(columns + kColumnsPerTile - 1) / kColumnsPerTile,
          std::max<int64_t>(1, (rows + kRowsPerChunk - 1) / kRowsPerChunk)};
}

// Blocks of pass 1 of a sum of squares over n elements: enough to fill the GPU, a fixed
// function of n (so the order of the additions is too).
inline int64_t sum_squares_blocks(int64_t n) {
  const int64_t per_block = kSumBlockThreads * 8;  // at least 8 elements per thread
  return std::clamp<int64_t>((n + per_block - 1) / per_block, 1, kMaxSumBlocks);
}

}  // namespace parallax::kernels::cuda
