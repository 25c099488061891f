// The CUDA backend's column reductions and gradient-norm sum at a real layer's size (8192 tokens
// x 4096 hidden, bf16), each timed with CUDA events against a device-to-device copy of the same
// matrix in the same run: "fraction_of_copy" is the reduction's bytes per second over the
// copy's (bytes read + written), so it needs no datasheet peak. Needs a GPU (scripts/test-gpu
// runs it). docs/cuda-backend.md states the fraction the kernels should reach.
#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "parallax/kernels/cuda/check.hpp"
#include "parallax/kernels/cuda/device.hpp"
#include "parallax/kernels/cuda/ops.hpp"

namespace cu = parallax::kernels::cuda;

namespace {

constexpr int64_t kRows = 8192, kColumns = 4096;

struct Buffers {
  cudaStream_t s = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* matrix = nullptr;  // kRows x kColumns bf16 (also read as fp32 by the sum of squares)
  void* copy = nullptr;
  float* columns = nullptr;
  double* acc = nullptr;
  Buffers() {
    PX_CUDA(cudaStreamCreate(&s));
    PX_CUDA(cudaEventCreate(&start));
    PX_CUDA(cudaEventCreate(&stop));
    const size_t bytes = kRows * kColumns * 4;
    PX_CUDA(cudaMalloc(&matrix, bytes));
    PX_CUDA(cudaMalloc(&copy, bytes));
    PX_CUDA(cudaMemset(matrix, 0x3c, bytes));
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&columns), kColumns * sizeof(float)));
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&acc), sizeof(double)));
  }
  ~Buffers() {
    cudaFree(matrix);
    cudaFree(copy);
    cudaFree(columns);
    cudaFree(acc);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(s);
  }
  template <class F>
  double seconds(F&& f) {
    PX_CUDA(cudaEventRecord(start, s));
    f();
    PX_CUDA(cudaEventRecord(stop, s));
    PX_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    PX_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  }
};

// Times `op` (reading `bytes_read`) and a copy of `bytes_read` bytes, alternately.
template <class Op>
void against_copy(benchmark::State& state, int64_t bytes_read, Op op) {
  Buffers b;
  op(b);  // warm-up: module load, memory pool
  double op_s = 0, copy_s = 0;
  for (auto _ : state) {
    const double t = b.seconds([&] { op(b); });
    copy_s += b.seconds([&] {
      PX_CUDA(cudaMemcpyAsync(b.copy, b.matrix, static_cast<size_t>(bytes_read), cudaMemcpyDeviceToDevice, b.s));
    });
    op_s += t;
    state.SetIterationTime(t);
  }
  const double op_bw = static_cast<double>(bytes_read) * static_cast<double>(state.iterations()) / op_s;
  const double copy_bw = 2.0 * static_cast<double>(bytes_read) * static_cast<double>(state.iterations()) / copy_s;
  state.counters["GB_per_s"] = op_bw / 1e9;
  state.counters["copy_GB_per_s"] = copy_bw / 1e9;
  state.counters["fraction_of_copy"] = op_bw / copy_bw;
}

void BM_bias_backward(benchmark::State& state) {
  against_copy(state, kRows * kColumns * 2, [](Buffers& b) {
    cu::bias_backward(b.columns, static_cast<const cu::bf16*>(b.matrix), kRows, kColumns, b.s);
  });
}

void BM_sum_squares(benchmark::State& state) {
  against_copy(state, kRows * kColumns * 4, [](Buffers& b) {
    cu::sum_squares_add(b.acc, static_cast<const float*>(b.matrix), kRows * kColumns, b.s);
  });
}

}  // namespace

BENCHMARK(BM_bias_backward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_sum_squares)->UseManualTime()->Unit(benchmark::kMicrosecond);
int main(int argc, char** argv) {
  std::string why;
  if (cu::device_count(&why) == 0) {  // one line and exit code 2, as `run --backend cuda`
    std::fprintf(stderr, "bench_cuda_reductions: no CUDA device (%s)\n", why.c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
