#include "parallax/core/stack_spec.hpp"

namespace parallax {

void apply_stack(const StackSpec& stack, JobSpec& j) {
  j.attention = stack.attention;
  j.kernels = stack.kernels;
  j.overlap = stack.overlap;
  j.fp8 = stack.fp8;
  j.loss_bytes_per_logit = stack.loss_bytes_per_logit;
  j.selective = stack.selective;
}

}  // namespace parallax
