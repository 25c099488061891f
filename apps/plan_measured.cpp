#include "plan_measured.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "parallax/calibration/megatron_log.hpp"
#include "parallax/calibration/torchtitan_log.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

// The p-quantile of sorted values, linear between order statistics (Hyndman and Fan type 7).
double quantile(const std::vector<double>& sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

void set_steps(MeasuredPlan& m, std::vector<double> steps) {
  if (steps.size() > 1) steps.erase(steps.begin());  // warm-up
  m.steps_s = steps;
  std::sort(steps.begin(), steps.end());
  m.time_s = quantile(steps, 0.5);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) throw InputError(path, "--measured", "cannot be read");
  return s.str();
}

// The first of model, cluster, GPUs and job on which the measured plan's file differs.
std::string differing_part(const PlanFile& a, const PlanFile& b) {
  if (to_json(a.model) != to_json(b.model)) return "model (" + a.model.name + ", planned " + b.model.name + ")";
  if (to_json(a.cluster) != to_json(b.cluster)) return "cluster (" + a.cluster.name + ", planned " + b.cluster.name + ")";
  if (a.gpus != b.gpus) return "GPU count (" + std::to_string(a.gpus) + ", planned " + std::to_string(b.gpus) + ")";
  if (to_json(a.job) != to_json(b.job)) return "job (batch, precision or stack)";
  return "";
}

// A trainer's log is read with the plan.json of its directory.
PlanFile plan_beside(const std::string& path) {
  const std::string plan_path = (std::filesystem::path(path).parent_path() / "plan.json").string();
  if (!std::filesystem::exists(plan_path))
    throw InputError(path, "--measured",
                     "a trainer's log is read with the plan.json of its directory (plan --shortlist "
                     "writes one); there is none at " + plan_path);
  return read_plan_file(read_json_file(plan_path), plan_path);
}

// A TorchTitan step took global batch x sequence / (tokens per second per GPU x GPUs).
MeasuredPlan read_torchtitan(const std::string& path, const std::string& text) {
  const calib::TorchTitanLog log = calib::parse_torchtitan_log(text, path);
  MeasuredPlan m;
  m.source = path;
  m.kind = "torchtitan log";
  m.plan = plan_beside(path);
  const double tokens = static_cast<double>(m.plan.job.global_batch * m.plan.model.seq_len);
  std::vector<double> steps;
  for (const calib::TorchTitanStep& s : log.steps)
    steps.push_back(tokens / (s.tokens_per_s_per_gpu * static_cast<double>(m.plan.gpus)));
  set_steps(m, steps);
  return m;
}

MeasuredPlan read_megatron(const std::string& path, const std::string& text) {
  const calib::MegatronLog log = calib::parse_megatron_log(text, path);
  MeasuredPlan m;
  m.source = path;
  m.kind = log.dialect + " log";
  m.plan = plan_beside(path);
  std::vector<double> steps;
  for (const calib::MegatronIteration& it : log.iterations) {
    if (it.global_batch != 0 && it.global_batch != m.plan.job.global_batch)
      throw InputError(path, "line " + std::to_string(it.line) + ", global batch size",
                       "must be the plan's " + std::to_string(m.plan.job.global_batch) + " (got " +
                           std::to_string(it.global_batch) + ")");
    steps.push_back(it.elapsed_ms / 1e3);
  }
  set_steps(m, steps);
  return m;
}

MeasuredPlan read_one(const std::string& path) {
  const std::string text = read_text(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{')
    return calib::looks_like_torchtitan_log(text) ? read_torchtitan(path, text) : read_megatron(path, text);
  MeasuredPlan m;
  m.source = path;
  m.kind = "parallax run";
  m.run = calib::read_measurements(path);
  m.plan = m.run->plan;
  set_steps(m, m.run->iteration_s);
  return m;
}

}  // namespace

std::vector<MeasuredPlan> read_measured(const std::vector<std::string>& paths, const PlanFile& planned) {
  std::vector<MeasuredPlan> out;
  for (const std::string& p : paths) {
    MeasuredPlan m = read_one(p);
    if (m.steps_s.empty()) throw InputError(p, "--measured", "holds no iteration times");
    if (const std::string part = differing_part(m.plan, planned); !part.empty())
      throw InputError(p, "--measured", "measures another job than the one planned: its " + part + " differs");
    for (const MeasuredPlan& o : out)
      if (o.plan.plan == m.plan.plan)
        throw InputError(p, "--measured", "measures the same plan as " + o.source + ": give one run per plan");
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

FinalPlan measured_final(const RankedPlan& r, const MeasuredPlan& m, double level) {
  FinalPlan f{r, &m, m.time_s, 0, 0, ""};
  std::vector<double> s = m.steps_s;
  std::sort(s.begin(), s.end());
  f.low_s = quantile(s, (1 - level) / 2);
  f.high_s = quantile(s, (1 + level) / 2);
  f.basis = "measured: " + m.source + " (" + std::to_string(s.size()) + " steps)";
  return f;
}

}  // namespace

FinalRanking final_ranking(const SearchResult& res, const std::vector<MeasuredPlan>& measured,
                           const TieRule& ties, const std::function<RankedPlan(const PlanSpec&)>& predict_plan,
                           const std::function<PredictionInterval(const PlanSpec&)>& interval_of) {
  FinalRanking out;
  out.level = ties.level;
  out.profile_refit = std::any_of(measured.begin(), measured.end(), [](const MeasuredPlan& m) { return m.run.has_value(); });
  std::vector<RankedPlan> plans = res.plans;
  std::vector<const MeasuredPlan*> of(plans.size(), nullptr);
  double log_sum = 0;
  for (const MeasuredPlan& m : measured) {
    auto it = std::find_if(plans.begin(), plans.end(), [&](const RankedPlan& r) { return r.plan == m.plan.plan; });
    if (it == plans.end()) {  // measured, but outside the search: priced on its own
      plans.push_back(predict_plan(m.plan.plan));
      of.push_back(nullptr);
      it = plans.end() - 1;
    }
    of[static_cast<size_t>(it - plans.begin())] = &m;
    log_sum += std::log(m.time_s / it->time_s);
  }
  if (!measured.empty()) out.shared_scale = std::exp(log_sum / static_cast<double>(measured.size()));
  for (size_t i = 0; i < plans.size(); ++i) {
    if (of[i] != nullptr) {
      out.plans.push_back(measured_final(plans[i], *of[i], out.level));
      continue;
    }
    FinalPlan f{plans[i], nullptr, plans[i].time_s * out.shared_scale, 0, 0, ""};
    if (std::isfinite(ties.log_ratio) && !measured.empty()) {
      f.low_s = f.time_s * std::exp(-ties.log_ratio);
      f.high_s = f.time_s * std::exp(ties.log_ratio);
      f.basis = "refitted model; the ratio error of two plans' times";
    } else {
      const PredictionInterval iv = interval_of(plans[i].plan);
      f.low_s = f.time_s * iv.low_ratio;
      f.high_s = f.time_s * iv.high_ratio;
      f.basis = "refitted model; the corpus's interval (no ratio error to anchor on)";
    }
    out.plans.push_back(f);
  }
  std::stable_sort(out.plans.begin(), out.plans.end(),
                   [](const FinalPlan& a, const FinalPlan& b) { return a.time_s < b.time_s; });
  return out;
}

std::string final_text(const FinalRanking& f, size_t top) {
  size_t measured = 0;
  for (const FinalPlan& p : f.plans) measured += p.measured != nullptr ? 1 : 0;
  std::string s = "final ranking: the " + std::to_string(measured) +
                  " measured plans by their measured time (median step, the first left out), the rest by the "
                  "model " + (f.profile_refit ? "refitted on the executed runs " : "") +
                  "times the error they all share, x" + fmt(f.shared_scale, 3) +
                  " (measured over predicted, geometric mean); " + fmt(f.level * 100, 0) + "% intervals\n";
  TextTable t({"#", "plan", "iter s", "interval s", "basis"});
  for (size_t i = 0; i < top && i < f.plans.size(); ++i) {
    const FinalPlan& p = f.plans[i];
    t.add_row({std::to_string(i + 1), plan_line(p.ranked.plan), fmt(p.time_s, 4),
               fmt(p.low_s, 4) + "-" + fmt(p.high_s, 4), p.basis});
  }
  s += t.str();
  if (!f.plans.empty() && f.plans.front().measured == nullptr)
    s += "the fastest by the refitted model was not measured: measure it before trusting the order\n";
  return s;
}

PlanExpectation expectation(const FinalRanking& f) {
  const FinalPlan& p = f.plans.front();
  return {p.time_s, f.level, p.low_s, p.high_s, {p.basis}};
}

nlohmann::json final_json(const FinalRanking& f, size_t top) {
  nlohmann::json plans = nlohmann::json::array();
  for (size_t i = 0; i < top && i < f.plans.size(); ++i) {
    const FinalPlan& p = f.plans[i];
    nlohmann::json j = {{"plan", to_json(p.ranked.plan)},
                        {"iteration_time_s", p.time_s},
                        {"measured", p.measured != nullptr},
                        {"interval", {{"level", f.level}, {"iteration_time_s", {p.low_s, p.high_s}}, {"basis", {p.basis}}}}};
    if (p.measured != nullptr) {
      j["source"] = p.measured->source;
      j["interval"]["rows"] = p.measured->steps_s.size();
    }
    plans.push_back(j);
  }
  return {{"level", f.level}, {"shared_scale", f.shared_scale}, {"profile_refit", f.profile_refit}, {"plans", plans}};
}

}  // namespace parallax::cli
