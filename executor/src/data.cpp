#include "parallax/executor/data.hpp"

#include <cstring>
#include <fstream>

#include "parallax/core/error.hpp"
#include "parallax/executor/rng.hpp"

namespace parallax::exec {

TokenSource::TokenSource(uint64_t seed, int64_t vocab) : seed_(seed), vocab_(vocab) {}

TokenSource TokenSource::from_file(const std::string& path, int64_t vocab, int64_t seq_len) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "--data", "cannot open the token file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TokenSource s;
  s.vocab_ = vocab;
  s.path_ = path;
  size_t begin = 0;
  if (bytes.size() >= 1024) {
    int32_t header[256];
    std::memcpy(header, bytes.data(), sizeof(header));
    if (header[0] == 20240520) {
      if (header[1] != 1)
        throw InputError(path, "header[1]", "llm.c token file version must be 1 (got " +
                                                std::to_string(header[1]) + ")");
      if (header[2] < 0)
        throw InputError(path, "header[2]", "token count must be >= 0 (got " + std::to_string(header[2]) + ")");
      const size_t n = static_cast<size_t>(header[2]);
      if (bytes.size() != 1024 + 2 * n)
        throw InputError(path, "header[2]", "token count " + std::to_string(n) +
                                                " does not match the file size");
      begin = 1024;
    }
  }
  if ((bytes.size() - begin) % 2 != 0)
    throw InputError(path, "--data", "raw uint16 token file has an odd number of bytes");
  const size_t count = (bytes.size() - begin) / 2;
  if (static_cast<int64_t>(count) < seq_len + 1)
    throw InputError(path, "--data", "needs at least seq_len + 1 = " + std::to_string(seq_len + 1) +
                                         " tokens (got " + std::to_string(count) + ")");
  s.tokens_.resize(count);
  std::memcpy(s.tokens_.data(), bytes.data() + begin, count * 2);
  for (size_t i = 0; i < s.tokens_.size(); ++i)
    if (s.tokens_[i] >= vocab)
      throw InputError(path, "token " + std::to_string(i),
                       "must be < vocab " + std::to_string(vocab) + " (got " +
                           std::to_string(s.tokens_[i]) + ")");
  return s;
}

void TokenSource::sequence(int64_t g, int64_t T, int32_t* inputs, int32_t* targets) const {
  if (tokens_.empty()) {
    const uint64_t base = mix64(seed_ ^ mix64(static_cast<uint64_t>(g) + 0x5eed));
    int64_t tok = static_cast<int64_t>(base % static_cast<uint64_t>(vocab_));
    for (int64_t t = 0; t <= T; ++t) {
      if (t < T) inputs[t] = static_cast<int32_t>(tok);
      if (t > 0) targets[t - 1] = static_cast<int32_t>(tok);
      const uint64_t r = mix64(base + static_cast<uint64_t>(t) * 0x9e3779b97f4a7c15ULL);
      tok = (5 * tok + 3 + static_cast<int64_t>(r % 4)) % vocab_;
    }
    return;
  }
  const int64_t n = static_cast<int64_t>(tokens_.size());
  const int64_t windows = n - T;  // start positions with T+1 tokens
  const int64_t start = (g * T) % windows;
  for (int64_t t = 0; t < T; ++t) {
    inputs[t] = tokens_[static_cast<size_t>(start + t)];
    targets[t] = tokens_[static_cast<size_t>(start + t + 1)];
  }
}

std::string TokenSource::description() const {
  if (tokens_.empty()) return "synthetic (seed " + std::to_string(seed_) + ")";
  return path_ + " (" + std::to_string(tokens_.size()) + " tokens)";
}

}  // namespace parallax::exec
