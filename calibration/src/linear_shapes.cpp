#include "parallax/calibration/linear_shapes.hpp"

#include "parallax/costmodel/ops.hpp"

namespace parallax::calib {

std::vector<LinearShape> layer_linear_shapes(const ModelSpec& m, int64_t tp, int64_t micro_batch) {
  const int64_t N = micro_batch * m.seq_len, C = m.hidden, Ct = m.hidden / tp, F = m.ffn_hidden / tp;
  const int64_t fc_out = m.activation == Activation::swiglu ? 2 * F : F;
  return {{"qkv", N, 3 * Ct, C},
          {"proj", N, C, Ct},
          {"fc", N, fc_out, C},
          {"fc_proj", N, C, F},
          {"head", N, padded_vocab(m.vocab, tp) / tp, C}};
}

}  // namespace parallax::calib
