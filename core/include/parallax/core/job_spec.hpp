#pragma once
// What is being trained: batch, tokens, precision, optimizer, price, and the software stack.
#include <cstdint>
#include <string>

#include "parallax/core/gpu_spec.hpp"

namespace parallax {

// Bytes per parameter for weights + gradients + optimizer state with mixed-precision Adam.
//   b16: bf16 weights 2, bf16 grads 2, fp32 master + m + v 12 (ZeRO paper)
//   b18: bf16 weights 2, fp32 grads 4, fp32 master + m + v 12 (Megatron-LM, DESIGN.md)
//   b20: fp16 weights 2, fp16 grads 2 + fp32 grad copy 4, fp32 master + m + v 12 (MT-NLG paper)
enum class ParamBytesConvention { b16, b18, b20 };

// How the stack computes attention's core (scores, softmax, context): unfused materialises the
// s x s scores and probabilities (Megatron-LM's scale-mask-softmax kernels, Korthikanti et al.
// 2022); fused tiles them in on-chip memory (FlashAttention, cuDNN fused attention) and stores none.
enum class Attention { unfused, fused };

struct JobSpec {
  int64_t global_batch = 0;  // sequences per iteration
  double tokens = 0;         // total training tokens; 0 = not given
  Dtype dtype = Dtype::bf16;
  std::string optimizer = "adam";
  double price_per_gpu_hour_usd = 0;  // 0 = not given
  ParamBytesConvention bytes_per_param = ParamBytesConvention::b18;
  // Software stack the run uses; selects that stack's entry in the efficiency profile.
  std::string framework = "megatron-lm";
  // From the stack's preset (presets/stacks/) unless the job says otherwise.
  Attention attention = Attention::unfused;
};

const char* to_string(ParamBytesConvention c);
const char* to_string(Attention a);
int bytes_per_param(ParamBytesConvention c);

}  // namespace parallax
