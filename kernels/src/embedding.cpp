// Vocab-parallel embedding lookup and learned positions.
#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t vocab_start,
                       int64_t vocab_rows, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    const int64_t row = static_cast<int64_t>(tokens[i]) - vocab_start;
    float* o = out + i * C;
    if (row >= 0 && row < vocab_rows)
      for (int64_t c = 0; c < C; ++c) o[c] = wte[row * C + c];
    else
      for (int64_t c = 0; c < C; ++c) o[c] = 0.0f;
  }
}

void embedding_backward(float* dwte, const float* dout, const int32_t* tokens,
                        int64_t vocab_start, int64_t vocab_rows, int64_t N, int64_t C) {
  // Serial over tokens: repeated tokens accumulate into one row in a fixed order.
  for (int64_t i = 0; i < N; ++i) {
    const int64_t row = static_cast<int64_t>(tokens[i]) - vocab_start;
    if (row < 0 || row >= vocab_rows) continue;
    for (int64_t c = 0; c < C; ++c) dwte[row * C + c] += dout[i * C + c];
  }
}

void position_forward(float* out, const float* wpe, int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) out[(b * T + t) * C + c] += wpe[t * C + c];
}

void position_backward(float* dwpe, const float* dout, int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) dwpe[t * C + c] += dout[(b * T + t) * C + c];
}

void position_forward_rows(float* out, const float* wpe, int64_t row0, int64_t rows, int64_t T,
                           int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = (row0 + i) % T;
    for (int64_t c = 0; c < C; ++c) out[i * C + c] += wpe[t * C + c];
  }
}

void position_backward_rows(float* dwpe, const float* dout, int64_t row0, int64_t rows,
                            int64_t T, int64_t C) {
  // Serial over rows: rows sharing a position accumulate in a fixed order.
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = (row0 + i) % T;
    for (int64_t c = 0; c < C; ++c) dwpe[t * C + c] += dout[i * C + c];
  }
}

}  // namespace parallax::kernels
