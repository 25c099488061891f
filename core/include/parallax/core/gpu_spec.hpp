#pragma once
// One accelerator: dense peak FLOP/s per dtype and HBM capacity and bandwidth.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

enum class Dtype { fp32, tf32, bf16, fp16, fp8 };
inline constexpr int kDtypeCount = 5;
// Every dtype, in the enum's order: what the readers accept and the writers loop over.
inline constexpr std::array<Dtype, kDtypeCount> kDtypes{Dtype::fp32, Dtype::tf32, Dtype::bf16, Dtype::fp16,
                                                        Dtype::fp8};

struct GpuSpec {
  std::string name;
  std::string source;
  // Dense (not sparse) peak per dtype; 0 means the GPU has no such math.
  std::array<double, kDtypeCount> peak_flops_per_s{};
  double hbm_bytes = 0;
  double hbm_bandwidth_bytes_per_s = 0;
  // Streaming multiprocessors (A100 108, H100 SXM 132): a collective overlapped with compute holds
  // some of them (the stack's comm_ctas), and GEMM tiles are scheduled over them in waves.
  // 0 = not given (CPU devices): no overlap slowdown is charged.
  int64_t sm_count = 0;
  // Compute capability ("sm80" A100, "sm90" H100/H200, "sm100" B200/GB200): which measurements of
  // a fused attention kernel apply (presets/attention/). Empty = not given (CPU devices).
  std::string arch;
  // The output tile (rows x columns of C) of the 16-bit GEMM kernels cuBLAS picks for large
  // GEMMs on this GPU: a GEMM runs in waves of sm_count tiles, and a partial last wave costs a
  // whole one (costmodel/gemm_waves.hpp). 0 = not given: no wave quantization is charged.
  int64_t gemm_tile_m = 0;
  int64_t gemm_tile_n = 0;
  std::string gemm_tile_source;

  double peak(Dtype d) const { return peak_flops_per_s[static_cast<int>(d)]; }
};

// The major version of the GPU's compute capability ("sm80" -> 8, "sm90" -> 9, "sm100" -> 10), as
// trainers read it from torch.cuda.get_device_capability(); nullopt when arch is not a compute
// capability (empty: a CPU device).
std::optional<int> compute_capability_major(const GpuSpec& g);

const char* to_string(Dtype d);
// Bytes of one element stored in this dtype (tf32 is stored as fp32).
double dtype_bytes(Dtype d);

}  // namespace parallax
