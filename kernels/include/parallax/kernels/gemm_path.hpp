#pragma once
// The GEMM path, chosen deliberately (docs/design.md §8). Debian's OpenBLAS picks its kernels in a
// library constructor, before main runs, and on these machines picks a slow core; the measured
// fix is OPENBLAS_CORETYPE=SkylakeX on CPUs with AVX-512. Since the choice is made at load
// time, the process must be (re)started with the variable set: wanted_openblas_coretype() says
// which core the CPU flags call for, and the CLI re-executes itself once with it.
#include <cstdint>
#include <string>

namespace parallax::kernels {

// "SkylakeX" when /proc/cpuinfo lists avx512f, "Haswell" with avx2 only, "" otherwise.
std::string wanted_openblas_coretype();
// Threads per rank for BLAS and OpenMP.
void set_compute_threads(int threads);
// What is in use, for measurements.json: e.g. "openblas 0.3.21 core SkylakeX, 2 threads".
std::string gemm_path_description();
std::string openblas_core_name();

}  // namespace parallax::kernels

namespace parallax::kernels {
// The machine's sgemm peak on this GEMM path: best FLOP/s of `reps` n x n x n products after
// one warm-up (the benchmark's denominator, measured in the same run).
double measure_sgemm_peak_flop_per_s(int64_t n, int reps);
}  // namespace parallax::kernels
