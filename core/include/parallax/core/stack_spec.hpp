#pragma once
// A software stack as data (presets/stacks/NAME.json): what it runs. Issue 23 grows it (overlaps,
// sharding, FP8); today it says how the stack computes attention.
#include <string>

#include "parallax/core/job_spec.hpp"

namespace parallax {

struct StackSpec {
  std::string name;
  std::string source;  // where each property comes from
  Attention attention = Attention::unfused;
};

}  // namespace parallax
