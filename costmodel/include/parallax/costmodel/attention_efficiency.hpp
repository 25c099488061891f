#pragma once
// The efficiency of a fused attention kernel at a head size and sequence length, read off its
// published measurements (presets/attention/).
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/attention_kernel.hpp"
#include "parallax/costmodel/ops.hpp"

namespace parallax {

// The first kernel with measurements on this architecture, else nullptr.
const AttentionKernel* attention_kernel_for(const std::vector<AttentionKernel>& kernels,
                                            const std::string& arch);

// Achieved / dense 16-bit peak of the kernel's forward (or backward) pass on `arch`: piecewise
// linear in log2(seq_len) between the measured lengths of a head size, then in log2(head_dim)
// between the measured head sizes; held at the nearest measurement outside their range (the
// kernels plateau at long sequences). nullopt when the kernel has no point on `arch`.
std::optional<double> attention_kernel_efficiency(const AttentionKernel& kernel,
                                                  const std::string& arch, double head_dim,
                                                  double seq_len, bool backward);

// A fused attention op's (op class flash_attention*) efficiency from `kernel` on `arch`, at the
// op's head size (its contraction k) and sequence length (its m), forward or backward by its phase
// (a recompute runs the forward); 0 where the kernel has no point on `arch`.
double op_attention_kernel_efficiency(const Op& op, const AttentionKernel& kernel,
                                      const std::string& arch);

}  // namespace parallax
