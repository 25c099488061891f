#pragma once
// Reading fused attention kernels (presets/attention/) and resolving a job's.
#include <map>
#include <string>
#include <vector>

#include "parallax/core/attention_kernel.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {

class JsonObjectReader;

// "sm" and digits: "sm80", "sm90", "sm100".
bool is_compute_capability(const std::string& arch);
AttentionKernel read_attention_kernel(JsonObjectReader& r);
// A stack's "attention_kernels" object: compute capability (or "*") -> kernel preset name.
void read_stack_attention_kernels(JsonObjectReader& r, std::map<std::string, std::string>& out);
// The job's named kernel (all its points), else the stack's kernel per architecture, each with
// only that architecture's points; empty when neither names one.
std::vector<AttentionKernel> resolve_attention_kernels(const std::string& job_kernel,
                                                       const StackSpec& stack);

}  // namespace parallax
