#pragma once
// Counter-based random numbers: a value depends only on (seed, tensor name, global index), so
// every plan initialises every parameter identically whatever shard a rank holds.
#include <cmath>
#include <cstdint>
#include <string>

namespace parallax::exec {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t hash_name(const std::string& s) {  // FNV-1a
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

// Standard normal by Box-Muller from two hashed uniforms.
inline float normal_at(uint64_t stream, uint64_t index) {
  const uint64_t a = mix64(stream ^ mix64(2 * index));
  const uint64_t b = mix64(stream ^ mix64(2 * index + 1));
  const double u1 = (static_cast<double>(a >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace parallax::exec
