// parallax validate: predict every run of the validation corpus and compare with what was
// measured; in sample (the committed profiles) or out of sample (--cross-validate source).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "corpus_path.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/validation/cross_validation.hpp"
#include "parallax/validation/residuals.hpp"
#include "parallax/validation/shortlist_check.hpp"
#include "parallax/validation/validation.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

struct ValidateArgs {
  std::vector<std::string> runs;
  std::vector<std::string> exclude;
  std::string profile;
  std::string cross_validate;
  std::string group_by;
  bool json = false;
  std::string residuals;  // with --cross-validate: where to write the residual table
  bool coverage = false;
  std::string interval_level;  // --coverage: one level (default: 80% and 50%)
  int64_t shortlist = 0;       // --shortlist K: the shortlist's check on the corpus's sweeps
};

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }

nlohmann::json summary_json(const ErrorSummary& s) {
  return {{"rows", s.rows}, {"mean_abs_error_pct", s.mean_abs_error_pct},
          {"max_abs_error_pct", s.max_abs_error_pct}};
}

nlohmann::json rows_json(const std::vector<ValidationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValidationRow& r : rows) {
    out.push_back({{"id", r.id}, {"source", r.source}, {"stack", r.stack}, {"gpu", r.gpu},
                   {"dtype", r.dtype}, {"sweep", r.sweep}, {"metric", r.measured.metric},
                   {"convention", r.measured.convention}, {"measured", r.measured.value},
                   {"predicted", r.predicted_value},
                   {"measured_iteration_time_s", r.measured_iteration_time_s},
                   {"predicted_iteration_time_s", r.predicted_iteration_time_s},
                   {"error_pct", r.error_pct}, {"schedule", to_string(r.plan.schedule)},
                   {"vpp", r.plan.vpp}, {"micro_batch", r.plan.micro_batch},
                   {"recompute", to_string(r.plan.recompute)},
                   {"sequence_parallel", r.plan.sequence_parallel}, {"zero", r.plan.zero},
                   {"filled", r.filled}, {"fits", r.fits},
                   {"predicted_peak_memory_gib", r.predicted_peak_memory_bytes / kGiB}});
    if (r.measured_peak_memory_bytes > 0)
      out.back()["measured_peak_memory_gib"] = r.measured_peak_memory_bytes / kGiB;
  }
  return out;
}

nlohmann::json report_json(const std::vector<ValidationRow>& rows, const ErrorSummary& s,
                           const std::vector<UnsupportedRun>& unsupported, const std::string& by) {
  nlohmann::json j = {{"rows", rows_json(rows)}, {"summary", summary_json(s)},
                      {"mean_abs_error_pct", s.mean_abs_error_pct},
                      {"max_abs_error_pct", s.max_abs_error_pct}};
  j["unsupported"] = nlohmann::json::array();
  for (const UnsupportedRun& u : unsupported) {
    j["unsupported"].push_back({{"id", u.id}, {"source", u.source}, {"reason", u.reason}});
  }
  j["groups"] = nlohmann::json::object();
  for (const GroupError& g : group_errors(rows, by)) j["groups"][g.key] = summary_json(g.summary);
  j["group_by"] = by;
  j["memory_summary"] = summary_json(summarize_memory(rows));
  j["sweeps"] = nlohmann::json::array();
  for (const SweepRank& w : sweep_ranks(rows)) {
    j["sweeps"].push_back({{"sweep", w.sweep}, {"rows", w.rows}, {"spearman", number_or_null(w.spearman)}});
  }
  return j;
}

// The rows whose source published a peak memory: the memory model against it.
void print_memory(const std::vector<ValidationRow>& rows) {
  const ErrorSummary m = summarize_memory(rows);
  if (m.rows == 0) return;
  TextTable t({"run", "published GiB", "predicted GiB", "error"});
  for (const ValidationRow& r : rows) {
    if (r.measured_peak_memory_bytes <= 0) continue;
    t.add_row({r.id, fmt(r.measured_peak_memory_bytes / kGiB, 1),
               fmt(r.predicted_peak_memory_bytes / kGiB, 1),
               fmt((r.predicted_peak_memory_bytes / r.measured_peak_memory_bytes - 1) * 100, 1) + "%"});
  }
  std::cout << "Peak memory per GPU, predicted (the most loaded stage, no reserve) vs published\n"
            << t.str() << "mean |error| " << fmt(m.mean_abs_error_pct, 2) << "%   max |error| "
            << fmt(m.max_abs_error_pct, 2) << "%   (" << m.rows << " runs)\n\n";
}

void print_text(const std::vector<ValidationRow>& rows, const ErrorSummary& s,
                const std::vector<UnsupportedRun>& unsupported, const std::string& by,
                const std::string& title) {
  TextTable t({"run", "metric", "measured", "predicted", "error", "fits"});
  std::string filled;
  for (const ValidationRow& r : rows) {
    t.add_row({r.id + (r.filled.empty() ? "" : " *"), r.measured.metric,
               fmt(r.measured.value, r.measured.value < 10 ? 3 : 1),
               fmt(r.predicted_value, r.predicted_value < 10 ? 3 : 1), fmt(r.error_pct, 1) + "%",
               r.fits ? "yes" : "NO"});
    if (!r.filled.empty()) filled += "  " + r.id + ": " + r.filled + "\n";
  }
  std::cout << title << "\n\n" << t.str() << '\n';
  if (!filled.empty()) {
    std::cout << "* what the source left open: the fastest setting the stack could run for an "
                 "unpublished plan field, and what the reader assumed\n"
              << filled << '\n';
  }
  TextTable g({by, "rows", "mean |error|", "max |error|"});
  for (const GroupError& e : group_errors(rows, by)) {
    g.add_row({e.key, std::to_string(e.summary.rows), fmt(e.summary.mean_abs_error_pct, 2) + "%",
               fmt(e.summary.max_abs_error_pct, 2) + "%"});
  }
  std::cout << g.str() << '\n';
  const auto sweeps = sweep_ranks(rows);
  if (!sweeps.empty()) {
    TextTable w({"sweep", "rows", "Spearman"});
    for (const SweepRank& x : sweeps) {
      w.add_row({x.sweep, std::to_string(x.rows), std::isfinite(x.spearman) ? fmt(x.spearman, 2) : "n/a"});
    }
    std::cout << "Ranking of the plans of one job (Spearman, predicted vs measured throughput)\n"
              << w.str() << '\n';
  }
  print_memory(rows);
  if (!unsupported.empty()) {
    std::cout << "Not predicted (the cost model cannot express them yet, or their metric cannot "
                 "be converted):\n";
    for (const UnsupportedRun& x : unsupported) std::cout << "  " << x.id << ": " << x.reason << '\n';
    std::cout << '\n';
  }
  std::cout << "mean |error| " << fmt(s.mean_abs_error_pct, 2) << "%   max |error| "
            << fmt(s.max_abs_error_pct, 2) << "%   (" << s.rows << " runs; " << unsupported.size()
            << " not predicted)\n"
            << "error = predicted / measured throughput - 1 (for an iteration time: of its "
               "throughput). fits NO: the memory model says the published plan does not fit.\n";
}

// The committed residual table's intervals on its own rows, each from the other source groups.
void run_coverage(const ValidateArgs& a) {
  std::vector<double> levels{0.8, 0.5};
  if (!a.interval_level.empty()) levels = {parse_number("--interval-level", a.interval_level, 0.01, 0.99)};
  const ResidualTable t = load_residuals();
  nlohmann::json j = nlohmann::json::array();
  for (const double level : levels) {
    const CoverageReport c = interval_coverage(t, level);
    nlohmann::json sources = nlohmann::json::object();
    TextTable tt({"source", "rows", "inside", "share"});
    for (const auto& [source, cov] : c.by_source) {
      sources[source] = {{"rows", cov.rows}, {"inside", cov.inside}};
      tt.add_row({source, std::to_string(cov.rows), std::to_string(cov.inside), fmt_pct(cov.share())});
    }
    j.push_back({{"level", level},
                 {"rows", c.all.rows},
                 {"inside", c.all.inside},
                 {"median_half_width", c.median_half_width},
                 {"sources", sources}});
    if (a.json) continue;
    std::cout << fmt(level * 100, 0) << "% intervals, each row's from the other sources' rows: "
              << c.all.inside << " of " << c.all.rows << " rows inside (" << fmt_pct(c.all.share())
              << "); median half-width " << fmt_pct(c.median_half_width) << " of the predicted time\n"
              << tt.str() << '\n';
  }
  if (a.json) std::cout << j.dump(2) << '\n';
}

// Each sweep's shortlist of K from its out-of-sample predictions, under the tie rule of the other
// groups' sweeps: does it hold the plan measured fastest?
void run_shortlist_check(const ValidateArgs& a) {
  const double level = a.interval_level.empty() ? kDefaultIntervalLevel
                                                : parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  const std::vector<SweepShortlist> sweeps = shortlist_check(load_residuals(), static_cast<size_t>(a.shortlist), level);
  nlohmann::json j = nlohmann::json::array();
  TextTable tt({"sweep", "plans", "measured fastest: predicted #", "its odds", "in shortlist", "sigma"});
  size_t held = 0, small = 0;
  for (const SweepShortlist& s : sweeps) {
    held += s.holds() ? 1 : 0;
    small += s.rows.size() <= s.shortlist.size() ? 1 : 0;
    const double odds = s.odds[s.measured_fastest_rank - 1];
    j.push_back({{"sweep", s.sweep}, {"source", s.source}, {"rows", s.rows}, {"odds", s.odds},
                 {"shortlist", s.shortlist}, {"measured_fastest", s.measured_fastest},
                 {"measured_fastest_predicted_rank", s.measured_fastest_rank}, {"holds", s.holds()},
                 {"sigma", s.sigma}, {"rule_sweeps", s.rule_sweeps}});
    tt.add_row({s.sweep, std::to_string(s.rows.size()), std::to_string(s.measured_fastest_rank), fmt_pct(odds),
                s.holds() ? "yes" : "NO", fmt(s.sigma, 3)});
  }
  if (a.json) {
    std::cout << nlohmann::json{{"k", a.shortlist}, {"level", level}, {"sweeps", j}}.dump(2) << '\n';
    return;
  }
  std::cout << "shortlist of " << a.shortlist << " on the corpus's sweeps, out of sample (each sweep's "
            << "predictions and tie rule without its source group; sigma: one plan's log-time error):\n"
            << tt.str() << "the shortlist holds the measured-fastest plan on " << held << " of "
            << sweeps.size() << " sweeps (" << small << " of them have no more plans than the shortlist)\n";
  const auto no_rule = std::find_if(sweeps.begin(), sweeps.end(), [](const SweepShortlist& s) { return std::isinf(s.sigma); });
  if (no_rule != sweeps.end())
    std::cout << "sigma inf: fewer than " << no_rule->rule_needed
              << " sweeps outside the sweep's source group, so no tie rule: every plan has the same odds and the "
                 "shortlist is the fastest predicted\n";
}

void run_validate(const ValidateArgs& a) {
  if (a.shortlist > 0) {
    run_shortlist_check(a);
    return;
  }
  if (a.coverage) {
    run_coverage(a);
    return;
  }
  if (!a.residuals.empty() && a.cross_validate.empty())
    throw InputError("command line", "--residuals", "needs --cross-validate source (its rows are the table)");
  if (!a.cross_validate.empty() && a.cross_validate != "source") {
    throw InputError("command line", "--cross-validate", "must be \"source\" (got \"" + a.cross_validate + "\")");
  }
  if (!a.cross_validate.empty() && !a.profile.empty()) {
    throw InputError("command line", "--profile", "cannot go with --cross-validate (which fits the profiles)");
  }
  const std::string by = a.group_by.empty() ? "source" : a.group_by;
  group_errors({}, by);  // a bad --group-by fails before any work
  const Corpus corpus = load_corpus(a.runs, a.exclude);
  std::vector<ValidationRow> rows;
  ErrorSummary s;
  std::string title;
  if (a.cross_validate.empty()) {
    std::optional<EfficiencyProfile> prof;
    if (!a.profile.empty()) prof = load_profile(a.profile);
    ValidationReport rep = validate_corpus(corpus, prof);
    if (a.json) {
      std::cout << report_json(rep.rows, rep.summary, rep.unsupported, by).dump(2) << '\n';
      return;
    }
    title = "Published runs vs prediction, in sample (the committed profiles, fitted on these rows)";
    print_text(rep.rows, rep.summary, rep.unsupported, by, title);
    return;
  }
  TopologyCache topos;
  const CrossValidation cv = cross_validate_by_source(corpus, topos);
  std::vector<UnsupportedRun> missing = corpus.unsupported;
  missing.insert(missing.end(), cv.unpredicted.begin(), cv.unpredicted.end());
  if (!a.residuals.empty()) write_file_atomic(a.residuals, to_json(residual_table(cv.rows)).dump(2) + "\n");
  if (a.json) {
    nlohmann::json j = report_json(cv.rows, cv.summary, missing, by);
    j["cross_validate"] = "source";
    j["folds"] = cv.folds;
    std::cout << j.dump(2) << '\n';
    return;
  }
  title = "Published runs vs prediction, out of sample: each source predicted by profiles fitted "
          "on the other sources (parallax fit's procedure)";
  print_text(cv.rows, cv.summary, missing, by, title);
  std::cout << "\nFolds:\n";
  for (const std::string& f : cv.folds) std::cout << "  " << f << '\n';
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand("validate", "reproduce published training runs");
  sub->add_option("--runs", args->runs,
                  "corpus directories or files (default: the project's validation/runs)");
  sub->add_option("--exclude-source", args->exclude, "leave this source out; repeatable");
  sub->add_option("--profile", args->profile,
                  "efficiency profile for every row (default: each cluster's)");
  sub->add_option("--cross-validate", args->cross_validate,
                  "\"source\": leave one source out, fit on the others, predict it");
  sub->add_option("--group-by", args->group_by, "source (default), stack, gpu or dtype");
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_option("--residuals", args->residuals,
                  "with --cross-validate source: write its rows as the residual table the prediction "
                  "intervals rest on (presets/residuals/corpus.json)");
  sub->add_flag("--coverage", args->coverage,
                "the prediction intervals' coverage on the corpus: each row's interval from the other "
                "sources' rows of the committed residual table, at 80% and 50%");
  sub->add_option("--interval-level", args->interval_level,
                  "with --coverage: this level only; with --shortlist: the tie rule's (default 0.8); in (0, 1)");
  sub->add_option("--shortlist", args->shortlist,
                  "the shortlist of K on every sweep of the corpus, out of sample: does it hold the plan "
                  "measured fastest? (plan --shortlist)")
      ->check(CLI::Range(int64_t{1}, int64_t{100}));
  sub->callback([args] { run_validate(*args); });
}

}  // namespace parallax::cli
