#pragma once
// A fused attention kernel as data (presets/attention/NAME.json): the fraction of the GPU's dense
// 16-bit peak its causal forward and backward passes reach, measured per GPU architecture, head
// size and sequence length by a public benchmark (each point names it).
#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

struct AttentionKernelPoint {
  std::string arch;  // compute capability the benchmark ran on ("sm80", "sm90", "sm100")
  int64_t head_dim = 0;
  int64_t seq_len = 0;
  double forward = 0;   // achieved / dense 16-bit peak, causal FLOPs (half of 4 s^2 d per head)
  double backward = 0;  // the same for the backward pass (2.5x the forward's FLOPs)
  bool operator==(const AttentionKernelPoint&) const = default;
};

struct AttentionKernel {
  std::string name;
  std::string source;
  std::vector<AttentionKernelPoint> points;
  bool operator==(const AttentionKernel&) const = default;
};

}  // namespace parallax
