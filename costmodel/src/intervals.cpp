#include "parallax/costmodel/intervals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {
namespace {

// The band a count falls in: "<= first", "a-b", ..., "> last".
std::string band(int64_t x, std::initializer_list<int64_t> bounds, const char* unit) {
  int64_t below = 0;
  for (int64_t b : bounds) {
    if (x <= b) return (below == 0 ? "<= " : std::to_string(below + 1) + "-") + std::to_string(b) + unit;
    below = b;
  }
  return "> " + std::to_string(below) + unit;
}

// The features in the order they are kept: the most telling first (the corpus's errors differ
// most between dense and MoE jobs, then between sharded and other data parallelism, then by GPU
// generation and stack; docs/validation-error.md).
struct Feature {
  const char* name;
  std::string (*label)(const JobFeatures& f);
};
constexpr Feature kFeatures[] = {
    {"moe", [](const JobFeatures& f) { return std::string(f.moe ? "mixture of experts" : "dense"); }},
    {"sharded", [](const JobFeatures& f) { return std::string(f.sharded ? "ZeRO-3/FSDP" : "not ZeRO-3/FSDP"); }},
    {"gpu", [](const JobFeatures& f) { return "GPU " + f.arch; }},
    {"stack", [](const JobFeatures& f) { return "stack " + f.stack; }},
    {"cp", [](const JobFeatures& f) { return std::string(f.cp ? "cp > 1" : "cp 1"); }},
    {"fp8", [](const JobFeatures& f) { return std::string(f.fp8 ? "fp8" : "16-bit"); }},
    {"seq", [](const JobFeatures& f) { return band(f.seq_len, {4096, 16384}, " tokens"); }},
    {"scale", [](const JobFeatures& f) { return band(f.gpus, {64, 512, 4096}, " GPUs"); }},
};
constexpr size_t kFeatureCount = std::size(kFeatures);

// Whether two jobs agree on the first `kept` features.
bool same_group(const JobFeatures& a, const JobFeatures& b, size_t kept) {
  for (size_t i = 0; i < kept; ++i)
    if (kFeatures[i].label(a) != kFeatures[i].label(b)) return false;
  return true;
}

// The rows comparable to a job, each weighted so that every source counts once: a new job is
// like a new source, whose error is mostly its own (a stack's version, a cluster's fabric) and
// only partly the row-to-row scatter within one source.
struct Weighted {
  double value;   // a residual, or a pair's |difference|
  double weight;  // 1 / (rows of its unit x (units + 1)): a source's rows, a sweep's pairs
};

// The first value, walking [first, last), at which the weight walked reaches `share` (the
// tolerance keeps a cumulative weight that is exactly the share under rounding: 9 sources at
// 80%); `none` where it never does.
template <class It>
double first_reaching(It first, It last, double share, double none) {
  double walked = 0;
  for (; first != last; ++first) {
    walked += first->weight;
    if (walked >= share - 1e-9) return first->value;
  }
  return none;
}

void sort_by_value(std::vector<Weighted>& r) {
  std::sort(r.begin(), r.end(), [](const Weighted& a, const Weighted& b) { return a.value < b.value; });
}

// The conformal ends over `sources` exchangeable sources (the weighted form of the order
// statistics; with one row per source, ranks floor((n + 1)(1 - L) / 2) and ceil((n + 1)(1 + L) / 2)):
// the test source's own mass 1 / (sources + 1) sits at -infinity for the low end and +infinity
// for the high end, so an end is finite only where the other sources' weight reaches (1 + L) / 2.
std::pair<double, double> conformal_ends(std::vector<Weighted> r, double level) {
  sort_by_value(r);
  const double inf = std::numeric_limits<double>::infinity();
  return {first_reaching(r.rbegin(), r.rend(), (1 + level) / 2, -inf),
          first_reaching(r.begin(), r.end(), (1 + level) / 2, inf)};
}

// The fewest units (sources, sweeps) of weight 1 / (n + 1) each whose total reaches `share`,
// the last unit's own mass being at infinity: n / (n + 1) >= share.
size_t units_needed(double share) {
  size_t n = 1;
  while (static_cast<double>(n) / static_cast<double>(n + 1) < share - 1e-9) ++n;
  return n;
}

JobFeatures read_features(JsonObjectReader& r) {
  JobFeatures f;
  f.stack = r.get_string("stack");
  f.arch = r.get_string("arch");
  f.moe = r.get_bool("moe");
  f.sharded = r.get_bool("sharded");
  f.cp = r.get_bool("cp");
  f.fp8 = r.get_bool("fp8");
  f.seq_len = r.get_int("seq_len", 1, Limits::max_seq_len);
  f.gpus = r.get_int("gpus", 1, Limits::max_gpus);
  return f;
}

}  // namespace

JobFeatures job_features(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p) {
  JobFeatures f;
  f.stack = j.framework;
  f.arch = c.gpu.arch.empty() ? c.gpu.name : c.gpu.arch;
  f.moe = m.is_moe();
  f.sharded = zero_stage_run(j, p) >= 3;
  f.cp = p.cp > 1;
  f.fp8 = j.dtype == Dtype::fp8;
  f.seq_len = m.seq_len;
  f.gpus = p.tp * p.cp * p.pp * p.dp;
  return f;
}

double ResidualRow::residual() const { return std::log(measured_iteration_time_s / predicted_iteration_time_s); }

ResidualTable read_residuals(JsonObjectReader& r) {
  ResidualTable t;
  t.source = r.get_string("source");
  const nlohmann::json& rows = r.array("rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    JsonObjectReader row(rows[i], r.source(), r.path_of("rows") + "[" + std::to_string(i) + "]");
    ResidualRow x;
    x.id = row.get_string("id");
    x.source = row.get_string("source");
    x.group = row.get_string("group");
    x.sweep = row.get_string_or("sweep", "");
    x.features = read_features(row);
    x.predicted_iteration_time_s = row.get_number("predicted_iteration_time_s", 1e-9, 1e9);
    x.measured_iteration_time_s = row.get_number("measured_iteration_time_s", 1e-9, 1e9);
    row.finish();
    t.rows.push_back(std::move(x));
  }
  r.finish();
  return t;
}

nlohmann::json to_json(const ResidualTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ResidualRow& x : t.rows) {
    const JobFeatures& f = x.features;
    nlohmann::json row = {{"id", x.id},
                          {"source", x.source},
                          {"group", x.group},
                          {"stack", f.stack},
                          {"arch", f.arch},
                          {"moe", f.moe},
                          {"sharded", f.sharded},
                          {"cp", f.cp},
                          {"fp8", f.fp8},
                          {"seq_len", f.seq_len},
                          {"gpus", f.gpus},
                          {"predicted_iteration_time_s", x.predicted_iteration_time_s},
                          {"measured_iteration_time_s", x.measured_iteration_time_s}};
    if (!x.sweep.empty()) row["sweep"] = x.sweep;
    rows.push_back(std::move(row));
  }
  return {{"source", t.source}, {"rows", rows}};
}

ResidualTable load_residuals() {
  const nlohmann::json j = preset_json("residuals", "corpus");
  JsonObjectReader r(j, "preset residuals/corpus");
  return read_residuals(r);
}

PredictionInterval prediction_interval(const ResidualTable& t, const JobFeatures& f, double level,
                                       const std::string& exclude_group) {
  PredictionInterval out;
  out.level = level;
  out.needed = units_needed((1 + level) / 2);  // (1 + L) / (1 - L) sources, 9 at 80%
  std::map<std::string, size_t> rows_of;  // the comparable rows of each source
  size_t kept = kFeatureCount;
  for (;; --kept) {
    rows_of.clear();
    for (const ResidualRow& x : t.rows)
      if (x.group != exclude_group && same_group(x.features, f, kept)) ++rows_of[x.source];
    if (rows_of.size() >= out.needed || kept == 0) break;
  }
  for (size_t i = 0; i < kFeatureCount; ++i) (i < kept ? out.basis : out.dropped).push_back(kFeatures[i].label(f));
  out.sources = rows_of.size();
  std::vector<Weighted> r;
  for (const ResidualRow& x : t.rows) {
    if (x.group == exclude_group || !same_group(x.features, f, kept)) continue;
    const double rows = static_cast<double>(rows_of.at(x.source));
    r.push_back({x.residual(), 1 / (rows * static_cast<double>(out.sources + 1))});
  }
  out.rows = r.size();
  const auto [low, high] = conformal_ends(std::move(r), level);
  out.low_ratio = std::exp(low);
  out.high_ratio = std::exp(high);
  return out;
}

bool TieRule::tied(double time_s, double winner_time_s) const {
  return std::log(time_s / winner_time_s) <= log_ratio;
}

TieRule tie_rule(const ResidualTable& t, double level, const std::string& exclude_group) {
  TieRule out;
  out.level = level;
  out.needed = units_needed(level);  // L / (1 - L) sweeps, 4 at 80%
  std::map<std::string, std::vector<double>> by_sweep;
  for (const ResidualRow& x : t.rows)
    if (!x.sweep.empty() && (exclude_group.empty() || x.group != exclude_group))
      by_sweep[x.sweep].push_back(x.residual());
  std::vector<std::pair<std::string, std::vector<double>>> sweeps;  // those with a pair
  for (auto& [name, r] : by_sweep)
    if (r.size() >= 2) sweeps.emplace_back(name, std::move(r));
  out.sweeps = sweeps.size();
  std::vector<Weighted> d;
  for (const auto& [name, r] : sweeps) {
    const double pairs = static_cast<double>(r.size() * (r.size() - 1) / 2);
    for (size_t i = 0; i < r.size(); ++i)
      for (size_t j = i + 1; j < r.size(); ++j)
        d.push_back({std::abs(r[i] - r[j]), 1 / (pairs * static_cast<double>(out.sweeps + 1))});
  }
  out.pairs = d.size();
  sort_by_value(d);
  out.log_ratio = first_reaching(d.begin(), d.end(), level, std::numeric_limits<double>::infinity());
  return out;
}

}  // namespace parallax
