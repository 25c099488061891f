#pragma once
// The divisors of n in increasing order: the sizes a parallel dimension or a micro-batch can take.
#include <cstdint>
#include <vector>

namespace parallax {

std::vector<int64_t> divisors(int64_t n);

}  // namespace parallax
