#pragma once
// Training tokens. Synthetic by default: seeded, and learnable (each sequence follows
// next = (5 * prev + 3 + small noise) mod V from a random start), so the loss visibly falls.
// Or a token file: raw little-endian uint16, or llm.c's format (256 int32 header, magic
// 20240520, version 1, token count at [2]; then uint16 tokens).
// Sequence g of the run is the same whatever the plan: global batch index
//   g = step * global_batch + dp_rank * (m * b) + micro_batch * b + i.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::exec {

class TokenSource {
 public:
  // Synthetic.
  TokenSource(uint64_t seed, int64_t vocab);
  // From a file; throws InputError naming the file when it is missing, malformed or has a token
  // >= vocab or fewer than seq_len + 1 tokens.
  static TokenSource from_file(const std::string& path, int64_t vocab, int64_t seq_len);

  // Inputs and targets (shifted by one) of global sequence g, T tokens each.
  void sequence(int64_t g, int64_t T, int32_t* inputs, int32_t* targets) const;
  std::string description() const;

 private:
  TokenSource() = default;
  uint64_t seed_ = 0;
  int64_t vocab_ = 0;
  std::vector<uint16_t> tokens_;  // empty: synthetic
  std::string path_;
};

}  // namespace parallax::exec
