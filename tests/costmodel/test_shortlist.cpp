// The shortlist's odds (costmodel/shortlist.hpp) against references computed another way: the
// closed form for two plans (P(A fastest) = Phi((ln t_B - ln t_A) / (sigma sqrt 2))), symmetry,
// and a Monte Carlo draw of the same error model for four plans.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parallax/costmodel/shortlist.hpp"

namespace parallax::test {
namespace {

double phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST_CASE("sigma: the tie rule's quantile of |e_A - e_B| is z((1 + L) / 2) sigma sqrt 2") {
  TieRule t;
  t.level = 0.8;
  t.log_ratio = 0.1;
  // z(0.9) = 1.2815515655 (standard normal tables).
  CHECK(plan_error_sigma(t) == Approx(0.1 / (std::sqrt(2.0) * 1.2815515655)).epsilon(1e-8));
  t.level = 0.5;  // z(0.75) = 0.6744897502
  CHECK(plan_error_sigma(t) == Approx(0.1 / (std::sqrt(2.0) * 0.6744897502)).epsilon(1e-8));
  t.log_ratio = std::numeric_limits<double>::infinity();
  CHECK(std::isinf(plan_error_sigma(t)));
}

TEST_CASE("two plans: the closed form") {
  const double sigma = 0.07;
  const std::vector<double> t = {10.0, 10.5};
  const std::vector<double> p = fastest_odds(t, sigma);
  const double a = phi(std::log(10.5 / 10.0) / (sigma * std::sqrt(2.0)));
  CHECK(p[0] == Approx(a).margin(1e-6));
  CHECK(p[1] == Approx(1 - a).margin(1e-6));
}

TEST_CASE("equal predictions share the odds; sigma 0 and infinity") {
  const std::vector<double> p = fastest_odds({3.0, 3.0, 3.0}, 0.1);
  for (double x : p) CHECK(x == Approx(1.0 / 3).margin(1e-6));
  CHECK(fastest_odds({2.0, 1.0, 1.5}, 0) == std::vector<double>{0, 1, 0});
  const std::vector<double> flat = fastest_odds({2.0, 1.0}, std::numeric_limits<double>::infinity());
  CHECK(flat[0] == Approx(0.5));
  // Far slower than the fastest by more than exp(12 sigma): no odds at all.
  CHECK(fastest_odds({1.0, std::exp(1.3)}, 0.1)[1] == 0);
}

TEST_CASE("four plans: a Monte Carlo draw of the same model agrees") {
  const double sigma = 0.08;
  const std::vector<double> t = {5.0, 5.2, 5.6, 6.5};
  const std::vector<double> p = fastest_odds(t, sigma);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> e(0, sigma);
  std::vector<double> wins(t.size(), 0);
  const int draws = 200000;
  for (int d = 0; d < draws; ++d) {
    size_t best = 0;
    double best_t = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < t.size(); ++i) {
      const double x = t[i] * std::exp(e(rng));
      if (x < best_t) best_t = x, best = i;
    }
    wins[best] += 1.0 / draws;
  }
  // 200k draws: a standard error under 0.0012 on each share.
  for (size_t i = 0; i < t.size(); ++i) CHECK(p[i] == Approx(wins[i]).margin(0.005));
  CHECK(most_likely_fastest(p, 2) == std::vector<size_t>{0, 1});
  CHECK(most_likely_fastest(p, 9).size() == 4);
  // The smallest set reaching the level, capped at k.
  const std::vector<double> odds = {0.5, 0.3, 0.15, 0.05};
  CHECK(shortlist_indices(odds, 4, 0.8) == std::vector<size_t>{0, 1});
  CHECK(shortlist_indices(odds, 4, 0.81) == std::vector<size_t>{0, 1, 2});
  CHECK(shortlist_indices(odds, 1, 0.8) == std::vector<size_t>{0});
  CHECK(shortlist_indices({0.5, 0.5}, 3, 0.8) == std::vector<size_t>{0, 1});
}

}  // namespace
}  // namespace parallax::test
