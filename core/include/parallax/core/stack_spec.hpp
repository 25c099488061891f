#pragma once
// A software stack as data (presets/stacks/NAME.json): how it computes attention and what it
// overlaps with compute.
#include <map>
#include <string>

#include "parallax/core/job_spec.hpp"

namespace parallax {

struct StackSpec {
  std::string name;
  std::string source;  // where each property comes from
  Attention attention = Attention::unfused;
  Kernels kernels = Kernels::fused;
  // With fused attention: the kernel (presets/attention/) the stack runs on each GPU architecture
  // ("sm90" -> "cudnn"); "*" is any architecture not listed.
  std::map<std::string, std::string> attention_kernels;
  StackOverlap overlap;
  Fp8Recipe fp8;
};

}  // namespace parallax
