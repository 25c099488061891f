#pragma once
// The shortlist's check on the corpus (issue 62's done-when): on every sweep of the residual
// table (one source, one job, several plans), its rows' out-of-sample predictions give each plan
// its odds of being the fastest (costmodel/shortlist.hpp) under the tie rule fitted on the other
// source groups' sweeps only; the shortlist of k holds the measured-fastest plan, or not.
#include <cstddef>
#include <string>
#include <vector>

#include "parallax/costmodel/intervals.hpp"

namespace parallax {

struct SweepShortlist {
  std::string sweep, source;
  std::vector<std::string> rows;       // the sweep's row ids, fastest predicted first
  std::vector<double> odds;            // each row's odds of being the fastest
  std::vector<std::string> shortlist;  // shortlist_indices: at most k, reaching the level
  std::string measured_fastest;        // the row measured fastest
  size_t measured_fastest_rank = 0;    // its rank by predicted time, 1-based
  double sigma = 0;                    // one plan's log-time deviation (plan_error_sigma)
  size_t rule_sweeps = 0;              // the other groups' sweeps the rule rests on
  size_t rule_needed = 0;              // the sweeps a finite rule needs at the level
  bool holds() const;                  // the shortlist holds the measured-fastest row
};

// Every sweep of t with two or more rows, in table order, at the tie rule's level.
std::vector<SweepShortlist> shortlist_check(const ResidualTable& t, size_t k, double level);

}  // namespace parallax
