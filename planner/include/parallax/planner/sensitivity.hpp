#pragma once
// Robustness of a plan choice: perturb compute efficiency, NVLink bandwidth and network bandwidth
// by +-20% one at a time (and all three down at once, the worst case), re-rank the plans that fit,
// and say whether the winner stays in the top 3.
#include <string>
#include <vector>

#include "parallax/planner/planner.hpp"

namespace parallax {

struct Perturbation {
  std::string name;
  double compute_scale = 1;
  double nvlink_scale = 1;
  double network_scale = 1;
};

struct SensitivityCase {
  Perturbation perturbation;
  int64_t winner_rank = 0;  // 0-based rank of the unperturbed winner under this perturbation
  RankedPlan best;          // the best plan under this perturbation
};

struct SensitivityReport {
  std::vector<SensitivityCase> cases;  // the six single perturbations, then the worst case
  bool winner_stays_top3 = true;       // in every case
};

SensitivityReport sensitivity_analysis(const PlannerInputs& in, const SearchResult& base,
                                       double delta = 0.2);

}  // namespace parallax
