// Parameter counts of the Llama-family presets: equal to the count derived by hand from the
// architecture, and within rounding of the totals the model cards publish.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/conventions.hpp"

using namespace parallax;

namespace {

struct Count {
  const char* preset;
  double by_hand;    // derived below, from the architecture alone
  double published;  // the total as published, rounded to `unit`
  double unit;       // 0: nothing published
};

// Llama layers (GQA, SwiGLU, RMSNorm, no biases) hold
//   h (a + 2 k) d    query, key and value projections (a heads, k KV heads, head width d = h / a)
//   + h h            output projection
//   + 3 h f          gate, up and down projections of the SwiGLU FFN
//   + 2 h            two RMSNorm weights
// and the model adds V h input embeddings, V h untied output weights and an h final RMSNorm.
//
// Llama 2 7B (h 4096, a = k = 32, f 11008, V 32000, 32 layers):
//   layer 3*4096^2 + 4096^2 + 3*4096*11008 + 8192 = 67,108,864 + 135,266,304 + 8,192 = 202,383,360
//   32 layers 6,476,267,520 + 2*32000*4096 = 262,144,000 + 4096 = 6,738,415,616
// Llama 2 70B (h 8192, a 64, k 8, d 128, f 28672, V 32000, 80 layers):
//   layer 8192*80*128 + 8192^2 + 3*8192*28672 + 16384
//       = 83,886,080 + 67,108,864 + 704,643,072 + 16,384 = 855,654,400
//   80 layers 68,452,352,000 + 2*32000*8192 = 524,288,000 + 8192 = 68,976,648,192
//
// Published: the "Model size" Hugging Face prints from the safetensors of the checkpoints (seen on
// copies of them): Llama 2 7B 6.74B, 70B "69B".
const Count kCounts[] = {
    {"llama2-7b", 6738415616, 6.74e9, 0.01e9},
    {"llama2-70b", 68976648192, 69e9, 1e9},
};

}  // namespace

TEST_CASE("Llama-family presets: parameters by hand and as published") {
  for (const Count& c : kCounts) {
    INFO("model preset " << c.preset);
    const double n = model_params(load_model(c.preset));
    CHECK(n == c.by_hand);  // integers below 2^53: exact in a double
    if (c.unit > 0) CHECK(std::abs(n - c.published) <= c.unit / 2);
  }
}
