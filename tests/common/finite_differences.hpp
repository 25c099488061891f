#pragma once
// Backward passes against central finite differences (the kernel tests' oracle).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace parallax::test {

// Checks analytic (from backward) against central differences of loss() over x.
inline void check_grad(std::vector<float>& x, const std::vector<float>& analytic,
                const std::function<double()>& loss, double tol = 2e-2, float eps = 1e-2f) {
  REQUIRE(x.size() == analytic.size());
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + eps;
    const double up = loss();
    x[i] = keep - eps;
    const double down = loss();
    x[i] = keep;
    const double num = (up - down) / (2.0 * eps);
    max_err = std::max(max_err, std::abs(num - analytic[i]));
    max_ref = std::max(max_ref, std::abs(num));
  }
  INFO("max abs error " << max_err << " of max |grad| " << max_ref);
  CHECK(max_err <= tol * std::max(max_ref, 1e-3));
}

}  // namespace parallax::test
