// The replica check's pieces (no MPI run): the fingerprint is FNV-1a-64 over the floats' bytes
// (reference values from the FNV specification's test vectors and an independent Python
// implementation), and mismatches are named against TP rank 0's fingerprints.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "parallax/executor/replica_check.hpp"

using parallax::exec::replica_mismatches;
using parallax::exec::tensor_fingerprint;

TEST_CASE("the replica fingerprint is FNV-1a-64 over the floats' bytes", "[replicas]") {
  CHECK(tensor_fingerprint(nullptr, 0) == 0xcbf29ce484222325ULL);  // FNV-1a-64 of ""
  float ab[2];
  std::memcpy(ab, "abcdefgh", 8);  // little-endian floats whose bytes spell "abcdefgh"
  CHECK(tensor_fingerprint(ab, 2) == 0x25da8c1836a8d66dULL);
  // Equal values with different bits are different replicas.
  const float zero = 0.0f, negative_zero = -0.0f;
  CHECK(tensor_fingerprint(&zero, 1) != tensor_fingerprint(&negative_zero, 1));
  const std::vector<float> x = {1.0f, 2.0f, 3.0f};
  std::vector<float> y = x;
  CHECK(tensor_fingerprint(x.data(), 3) == tensor_fingerprint(y.data(), 3));
  y[2] = std::nextafter(3.0f, 4.0f);  // one ulp
  CHECK(tensor_fingerprint(x.data(), 3) != tensor_fingerprint(y.data(), 3));
}

TEST_CASE("replica mismatches name every tensor some TP rank disagrees on", "[replicas]") {
  const std::vector<std::string> names = {"ln_f.weight", "wpe.weight", "h.0.ln_1.bias"};
  CHECK(replica_mismatches(names, {{1, 2, 3}}).empty());  // tp = 1
  CHECK(replica_mismatches(names, {{1, 2, 3}, {1, 2, 3}}).empty());
  CHECK(replica_mismatches(names, {{1, 2, 3}, {1, 9, 3}}) == std::vector<std::string>{"wpe.weight"});
  CHECK(replica_mismatches(names, {{1, 2, 3}, {1, 2, 3}, {1, 2, 4}, {5, 2, 4}}) ==
        std::vector<std::string>{"ln_f.weight", "h.0.ln_1.bias"});
}
