#pragma once
// A software stack as data (presets/stacks/NAME.json): how it computes attention and what it
// overlaps with compute.
#include <string>

#include "parallax/core/job_spec.hpp"

namespace parallax {

struct StackSpec {
  std::string name;
  std::string source;  // where each property comes from
  Attention attention = Attention::unfused;
  Kernels kernels = Kernels::fused;
  StackOverlap overlap;
};

}  // namespace parallax
