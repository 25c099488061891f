#include "parallax/core/stack_spec.hpp"

namespace parallax {

void apply_stack(const StackSpec& stack, JobSpec& j) {
  j.attention = stack.attention;
  j.kernels = stack.kernels;
  j.overlap = stack.overlap;
  j.fp8 = stack.fp8;
  j.loss_bytes_per_logit = stack.loss_bytes_per_logit;
  j.selective = stack.selective;
  j.pipeline = stack.pipeline;
  j.capabilities = stack.capabilities;
}

int64_t zero_stage_run(const JobSpec& j, const PlanSpec& p) {
  if (p.zero >= 2 && p.pp > 1 && j.pipeline.sharded_stages) return 1;
  return p.zero;
}

}  // namespace parallax
