#include "parallax/costmodel/shortlist.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

namespace parallax {
namespace {

// The standard normal's upper tail, 1 - Phi(x).
double upper_tail(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }

// The standard normal's p-quantile, p in (0, 1), by bisection on the tail (64 halvings: to the
// last bit of a double over [-40, 40]).
double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 64; ++i) {
    const double mid = (lo + hi) / 2;
    (1 - upper_tail(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

constexpr double kSpan = 12;        // plans beyond min + kSpan sigma (in log time) get odds 0
constexpr int kSteps = 4000;        // quadrature intervals over [min - 9 sigma, min + 9 sigma]
constexpr double kReach = 9;

}  // namespace

double plan_error_sigma(const TieRule& t) {
  if (!std::isfinite(t.log_ratio)) return std::numeric_limits<double>::infinity();
  return t.log_ratio / (std::sqrt(2.0) * normal_quantile((1 + t.level) / 2));
}

std::vector<double> fastest_odds(const std::vector<double>& predicted_s, double sigma) {
  const size_t n = predicted_s.size();
  std::vector<double> odds(n, 0);
  if (n == 0) return odds;
  std::vector<double> mu(n);
  for (size_t i = 0; i < n; ++i) mu[i] = std::log(predicted_s[i]);
  const double best = *std::min_element(mu.begin(), mu.end());
  if (!std::isfinite(sigma)) return std::vector<double>(n, 1.0 / static_cast<double>(n));
  if (sigma <= 0) {
    const auto fastest = static_cast<double>(std::count(mu.begin(), mu.end(), best));
    for (size_t i = 0; i < n; ++i) odds[i] = mu[i] == best ? 1 / fastest : 0;
    return odds;
  }
  std::vector<size_t> near;  // the plans that may be the fastest
  for (size_t i = 0; i < n; ++i)
    if (mu[i] <= best + kSpan * sigma) near.push_back(i);
  const double lo = best - kReach * sigma, step = 2 * kReach * sigma / kSteps;
  std::vector<double> log_tail(near.size());
  for (int s = 0; s <= kSteps; ++s) {
    const double y = lo + s * step;
    const double w = (s == 0 || s == kSteps) ? 0.5 : 1.0;  // trapezoid
    double all = 0;  // log of the product of every near plan's tail at y
    for (size_t k = 0; k < near.size(); ++k) {
      log_tail[k] = std::log(upper_tail((y - mu[near[k]]) / sigma));
      all += log_tail[k];
    }
    for (size_t k = 0; k < near.size(); ++k) {
      const double z = (y - mu[near[k]]) / sigma;
      const double density = std::exp(-z * z / 2) / (sigma * std::sqrt(2 * std::numbers::pi));
      if (density == 0 || !std::isfinite(log_tail[k])) continue;
      odds[near[k]] += w * step * density * std::exp(all - log_tail[k]);
    }
  }
  const double total = std::accumulate(odds.begin(), odds.end(), 0.0);
  for (double& o : odds) o /= total;
  return odds;
}

std::vector<size_t> most_likely_fastest(const std::vector<double>& odds, size_t k) {
  std::vector<size_t> idx(odds.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return odds[a] > odds[b]; });
  idx.resize(std::min(k, idx.size()));
  return idx;
}

std::vector<size_t> shortlist_indices(const std::vector<double>& odds, size_t k, double level) {
  std::vector<size_t> out;
  double held = 0;
  for (size_t i : most_likely_fastest(odds, k)) {
    if (held >= level - 1e-12) break;
    out.push_back(i);
    held += odds[i];
  }
  return out;
}

}  // namespace parallax
