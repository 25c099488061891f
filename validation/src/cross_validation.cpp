#include "parallax/validation/cross_validation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/validation/profile_fit.hpp"

namespace parallax {
namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

std::string key_of(const ValidationRow& r, const std::string& by) {
  if (by == "source") return r.source;
  if (by == "stack") return r.stack;
  if (by == "gpu") return r.gpu;
  if (by == "dtype") return r.dtype;
  throw InputError("command line", "--group-by", "must be source, stack, gpu or dtype (got \"" + by + "\")");
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2) return nan;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return nan;
  return sab / std::sqrt(saa * sbb);
}

std::vector<SweepRank> sweep_ranks(const std::vector<ValidationRow>& rows) {
  std::map<std::string, std::vector<const ValidationRow*>> by;
  for (const ValidationRow& r : rows) {
    if (!r.sweep.empty()) by[r.sweep].push_back(&r);
  }
  std::vector<SweepRank> out;
  for (const auto& [name, rs] : by) {
    if (rs.size() < 3) continue;
    std::vector<double> measured, predicted;
    for (const ValidationRow* r : rs) {
      measured.push_back(1 / r->measured_iteration_time_s);
      predicted.push_back(1 / r->predicted_iteration_time_s);
    }
    out.push_back({name, rs.size(), spearman(predicted, measured)});
  }
  return out;
}

std::vector<GroupError> group_errors(const std::vector<ValidationRow>& rows, const std::string& by) {
  std::map<std::string, std::vector<ValidationRow>> groups;
  for (const ValidationRow& r : rows) groups[key_of(r, by)].push_back(r);
  if (rows.empty()) key_of(ValidationRow{}, by);  // still reject a bad --group-by
  std::vector<GroupError> out;
  for (const auto& [k, rs] : groups) out.push_back({k, summarize(rs)});
  return out;
}

CrossValidation cross_validate_by_source(const Corpus& corpus, TopologyCache& topos) {
  std::set<std::string> stacks, groups;
  for (const PublishedRun& r : corpus.runs) {
    stacks.insert(r.stack);
    groups.insert(r.group);
  }
  const std::vector<std::string> stack_list(stacks.begin(), stacks.end());
  CrossValidation cv;
  for (const std::string& g : groups) {
    std::vector<PublishedRun> train;
    std::set<std::string> profiles;
    for (const PublishedRun& r : corpus.runs) {
      if (r.group == g) profiles.insert(r.cluster.profile);
      else train.push_back(r);
    }
    std::vector<EfficiencyProfile> bases;
    for (const std::string& name : profiles) bases.push_back(load_profile(name));
    const std::map<std::string, ProfileFit> fits = fit_profiles(train, bases, stack_list, "", topos);
    std::map<std::string, EfficiencyProfile> fitted;
    for (const auto& [name, f] : fits) {
      if (f.rows_used.empty()) {
        cv.folds.push_back(name + " without " + g + ": no rows, so no out-of-sample prediction");
        continue;  // the base's curve was fitted on the left-out rows themselves
      }
      fitted[name] = f.profile;
      std::string note = name + " without " + g + ": ";
      if (!f.profile.carries_fit_of.empty()) note += f.profile.carries_fit_of + "'s fit carried over, ";
      note += std::to_string(f.rows_used.size()) + " rows; curve fitted: " + f.curve_fitted;
      if (!f.moe_host_rows.empty()) {
        note += "; host time per MoE layer " + format_ms(f.profile.moe_layer_host_s) + " (" +
                std::to_string(f.moe_host_rows.size()) + " mixture-of-experts rows)";
      }
      for (const PublishedRun& r : corpus.runs) {
        if (r.group == g && r.cluster.profile == name && !f.stacks.count(r.stack) &&
            note.find("stack " + r.stack) == std::string::npos) {
          note += "; stack " + r.stack + " has no other rows: scale 1 (prior)";
        }
      }
      cv.folds.push_back(note);
    }
    for (const PublishedRun& r : corpus.runs) {
      if (r.group != g) continue;
      if (fitted.count(r.cluster.profile)) {
        cv.rows.push_back(validate_run(r, fitted.at(r.cluster.profile), topos));
      } else {
        cv.unpredicted.push_back({r.id, r.source, "no other source has rows for profile " +
                                                      r.cluster.profile + ": nothing to fit on"});
      }
    }
  }
  cv.summary = summarize(cv.rows);
  return cv;
}

}  // namespace parallax
