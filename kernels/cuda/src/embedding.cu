// Token and position embeddings. The backward passes add each table row's contributions in
// token order, exactly as the CPU kernels do (kernels/src/embedding.cpp), with no atomics: the
// same bits on every run, so TP ranks that compute a replicated gradient get the same one.
// Token rows: the tokens are sorted by row with CUB's stable radix sort (positions ascending
// within a row), then one thread per (row, column) walks its run. Position rows: one thread per
// (position, column) walks the rows at that position.
#include <cub/device/device_radix_sort.cuh>

#include <string>

#include "launch.cuh"
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::kernels::cuda {

using namespace detail;

namespace {

// Bits of the sort keys: rows 0..vocab_rows-1 and the key vocab_rows for tokens of other shards.
int key_bits(int64_t vocab_rows) {
  int bits = 1;
  while ((int64_t{1} << bits) <= vocab_rows) ++bits;
  return bits;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void embedding_forward(bf16* out, const int32_t* tokens, const bf16* wte, int64_t vocab_start,
                       int64_t vocab_rows, int64_t N, int64_t C, cudaStream_t s) {
  for_each(N * C, s, [=] __device__(int64_t e) {
    const int64_t i = e / C, c = e % C;
    const int64_t row = static_cast<int64_t>(tokens[i]) - vocab_start;
    out[e] = (row >= 0 && row < vocab_rows) ? wte[row * C + c] : bf16{0};
  });
}

void embedding_backward(float* dwte, const bf16* dout, const int32_t* tokens,
                        int64_t vocab_start, int64_t vocab_rows, int64_t N, int64_t C,
                        cudaStream_t s) {
  if (N <= 0 || C <= 0) return;
  if (N > 2147483647 || vocab_rows >= 2147483647)
    throw Error("embedding backward: " + std::to_string(N) + " tokens or " +
                std::to_string(vocab_rows) + " rows exceed the sort's int32 keys");
  const int n = static_cast<int>(N);
  const int bits = key_bits(vocab_rows);
  size_t sort_bytes = 0;
  PX_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                          static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                          static_cast<int32_t*>(nullptr), n, 0, bits, s));
  const size_t keys_bytes = aligned(static_cast<size_t>(N) * sizeof(int32_t));
  StreamScratch scratch(4 * keys_bytes + sort_bytes, s);
  auto* keys_in = scratch.as<int32_t>(0);
  auto* keys = scratch.as<int32_t>(keys_bytes);
  auto* pos_in = scratch.as<int32_t>(2 * keys_bytes);
  auto* pos = scratch.as<int32_t>(3 * keys_bytes);
  void* sort_temp = scratch.as<char>(4 * keys_bytes);
  for_each(N, s, [=] __device__(int64_t i) {
    const int64_t row = static_cast<int64_t>(tokens[i]) - vocab_start;
    keys_in[i] = static_cast<int32_t>((row >= 0 && row < vocab_rows) ? row : vocab_rows);
    pos_in[i] = static_cast<int32_t>(i);
  });
  PX_CUDA(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys_in, keys, pos_in, pos, n, 0,
                                          bits, s));
  // The first token of each row's run adds the run, in position order, onto the row.
  for_each(N * C, s, [=] __device__(int64_t e) {
    const int64_t j = e / C, c = e % C;
    const int32_t key = keys[j];
    if (key >= vocab_rows || (j > 0 && keys[j - 1] == key)) return;
    float acc = dwte[key * C + c];
    for (int64_t k = j; k < N && keys[k] == key; ++k)
      acc += to_float(dout[static_cast<int64_t>(pos[k]) * C + c]);
    dwte[key * C + c] = acc;
  });
}

void position_forward_rows(bf16* out, const bf16* wpe, int64_t row0, int64_t rows, int64_t T,
                           int64_t C, cudaStream_t s) {
  for_each(rows * C, s, [=] __device__(int64_t e) {
    const int64_t t = (row0 + e / C) % T;
    out[e] = to_bf16(to_float(out[e]) + to_float(wpe[t * C + e % C]));
  });
}

void position_backward_rows(float* dwpe, const bf16* dout, int64_t row0, int64_t rows,
                            int64_t T, int64_t C, cudaStream_t s) {
  if (rows <= 0) return;
  for_each(T * C, s, [=] __device__(int64_t e) {
    const int64_t t = e / C, c = e % C;
    int64_t i = ((t - row0) % T + T) % T;  // the first local row at position t
    if (i >= rows) return;
    float acc = dwpe[e];
    for (; i < rows; i += T) acc += to_float(dout[i * C + c]);
    dwpe[e] = acc;
  });
}

}  // namespace parallax::kernels::cuda
