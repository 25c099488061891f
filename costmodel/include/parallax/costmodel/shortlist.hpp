#pragma once
// Which plans of one job may be the fastest (docs/predict.md, "The shortlist").
//
// The ranking of one job's plans is wrong only by the error of the ratio of their times: the
// job's shared error (its GPU, stack, model) scales every plan alike. Each plan's true time is
// taken as its predicted time x exp(e), the e independent and normal with one deviation sigma,
// which the tie rule fixes: it says |e_A - e_B| (normal, deviation sigma sqrt 2) is within
// log_ratio at the rule's level L, so sigma = log_ratio / (sqrt 2 x z), z the standard normal's
// (1 + L) / 2 quantile. A plan's odds of being the fastest are then one integral over the
// fastest plan's log time y, P_i = integral of f_i(y) x prod over j != i of (1 - F_j(y)) dy,
// taken by quadrature (deterministic: the same inputs give the same shortlist).
#include <cstddef>
#include <vector>

#include "parallax/costmodel/intervals.hpp"

namespace parallax {

// The deviation of one plan's log-time error about the job's shared error; infinity where the
// rule has too few sweeps to say.
double plan_error_sigma(const TieRule& t);

// Each predicted time's odds of being the fastest (summing to 1). sigma 0: the fastest predicted
// has odds 1 (ties share them); sigma infinite: every plan has the same odds. Plans predicted
// slower than the fastest by more than exp(12 sigma) get 0.
std::vector<double> fastest_odds(const std::vector<double>& predicted_s, double sigma);

// The k indices of the highest odds, highest first (equal odds: the lower index, the faster
// predicted plan in a ranked list, first).
std::vector<size_t> most_likely_fastest(const std::vector<double>& odds, size_t k);

// The shortlist: the fewest plans, most likely first, whose odds together reach `level` (the
// smallest set holding the fastest with that probability), at most k (docs/design.md §13).
std::vector<size_t> shortlist_indices(const std::vector<double>& odds, size_t k, double level);

}  // namespace parallax
