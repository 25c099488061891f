#include "parallax/validation/shortlist_check.hpp"

#include <algorithm>
#include <map>

#include "parallax/costmodel/shortlist.hpp"

namespace parallax {

bool SweepShortlist::holds() const {
  return std::find(shortlist.begin(), shortlist.end(), measured_fastest) != shortlist.end();
}

namespace {

SweepShortlist check_sweep(const ResidualTable& t, std::vector<const ResidualRow*> rows, size_t k,
                           double level) {
  std::stable_sort(rows.begin(), rows.end(), [](const ResidualRow* a, const ResidualRow* b) {
    return a->predicted_iteration_time_s < b->predicted_iteration_time_s;
  });
  SweepShortlist s;
  s.sweep = rows.front()->sweep;
  s.source = rows.front()->source;
  const TieRule rule = tie_rule(t, level, rows.front()->group);  // out of sample
  s.sigma = plan_error_sigma(rule);
  s.rule_sweeps = rule.sweeps;
  s.rule_needed = rule.needed;
  std::vector<double> predicted;
  size_t fastest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    s.rows.push_back(rows[i]->id);
    predicted.push_back(rows[i]->predicted_iteration_time_s);
    if (rows[i]->measured_iteration_time_s < rows[fastest]->measured_iteration_time_s) fastest = i;
  }
  s.odds = fastest_odds(predicted, s.sigma);
  for (size_t i : shortlist_indices(s.odds, k, level)) s.shortlist.push_back(rows[i]->id);
  s.measured_fastest = rows[fastest]->id;
  s.measured_fastest_rank = fastest + 1;
  return s;
}

}  // namespace

std::vector<SweepShortlist> shortlist_check(const ResidualTable& t, size_t k, double level) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ResidualRow*>> by_sweep;
  for (const ResidualRow& x : t.rows) {
    if (x.sweep.empty()) continue;
    if (!by_sweep.contains(x.sweep)) order.push_back(x.sweep);
    by_sweep[x.sweep].push_back(&x);
  }
  std::vector<SweepShortlist> out;
  for (const std::string& name : order)
    if (by_sweep[name].size() >= 2) out.push_back(check_sweep(t, by_sweep[name], k, level));
  return out;
}

}  // namespace parallax
