#include "parallax/calibration/linear_shapes.hpp"

#include "parallax/costmodel/ops.hpp"

namespace parallax::calib {

std::vector<LinearShape> layer_linear_shapes(const ModelSpec& m, int64_t tp, int64_t micro_batch) {
  const int64_t N = micro_batch * m.seq_len, C = m.hidden, F = m.ffn_hidden / tp;
  // The local queries: hidden / tp unless head_dim is decoupled.
  const int64_t Ct = m.heads / tp * m.head_dim();
  const int64_t fc_out = m.activation == Activation::swiglu ? 2 * F : F;
  // q (Ct) | k | v, the latter two of kv_heads/tp heads each (grouped-query attention).
  const int64_t kv_local = m.kv_head_count() / tp * m.head_dim();
  return {{"qkv", N, Ct + 2 * kv_local, C},
          {"proj", N, C, Ct},
          {"fc", N, fc_out, C},
          {"fc_proj", N, C, F},
          {"head", N, padded_vocab(m.vocab, tp) / tp, C}};
}

}  // namespace parallax::calib
