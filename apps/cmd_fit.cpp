// parallax fit: a GPU profile's efficiency parameters fitted to the validation corpus.
#include <algorithm>
#include <iostream>
#include <memory>
#include <set>

#include "commands.hpp"
#include "corpus_path.hpp"
#include "parallax/calibration/machine.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/validation/cross_validation.hpp"
#include "parallax/validation/profile_fit.hpp"
#include "parallax/validation/residuals.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct FitArgs {
  std::vector<std::string> runs;
  std::vector<std::string> exclude;
  std::string profile;
  std::string out;
  std::string date;
  bool residuals = false;
};

// The residual table of the prediction intervals: every source predicted by profiles fitted on
// the others (validate --cross-validate source), its rows written as presets/residuals/ holds them.
void run_residuals(const FitArgs& a) {
  if (!a.profile.empty()) throw InputError("command line", "--profile", "cannot go with --residuals (which fits every profile)");
  const Corpus corpus = load_corpus(a.runs, a.exclude);
  TopologyCache topos;
  const CrossValidation cv = cross_validate_by_source(corpus, topos);
  write_file_atomic(a.out, to_json(residual_table(cv.rows)).dump(2) + "\n");
  std::cout << "residual table: " << cv.rows.size() << " rows predicted out of sample (mean |error| "
            << fmt(cv.summary.mean_abs_error_pct, 2) << "%)\nwrote " << a.out << '\n';
}

// Every stack of the corpus's rows, so that the profile predicts every row, and every stack
// preset: a stack without rows keeps the prior scale 1, so that --stack takes any stack the
// presets describe (DeepSpeed, PyTorch FSDP) on every GPU profile.
std::vector<std::string> profile_stacks(const Corpus& c) {
  std::set<std::string> s;
  for (const PublishedRun& r : c.runs) s.insert(r.stack);
  for (const std::string& name : preset_names("stacks")) s.insert(name);
  return {s.begin(), s.end()};
}

void run_fit(const FitArgs& a) {
  if (a.residuals) {
    run_residuals(a);
    return;
  }
  if (a.profile.empty()) throw InputError("command line", "--profile", "is required: the profile to fit (or --residuals)");
  const bool date_ok = a.date.size() == 10 && std::all_of(a.date.begin(), a.date.end(), [](char ch) {
    return ch == '-' || (ch >= '0' && ch <= '9');
  }) && a.date[4] == '-' && a.date[7] == '-';
  if (!a.date.empty() && !date_ok) {
    throw InputError("command line", "--date", "must be YYYY-MM-DD (got \"" + a.date + "\")");
  }
  const Corpus corpus = load_corpus(a.runs, a.exclude);
  const EfficiencyProfile base = load_profile(a.profile);
  TopologyCache topos;
  const ProfileFit fit = fit_profile_to_runs(corpus.runs, base, profile_stacks(corpus),
                                             a.date.empty() ? calib::utc_date() : a.date, topos);
  if (fit.rows_used.empty()) {
    throw InputError("command line", "--profile",
                     "no supported row of the corpus is predicted with profile " + base.name);
  }
  write_file_atomic(a.out, to_json(fit.profile).dump(2) + "\n");
  const EfficiencyProfile& p = fit.profile;
  std::cout << "profile " << p.name << ": " << fit.rows_used.size() << " rows; curve fitted: "
            << fit.curve_fitted << "\n  e_max " << p.gemm_curve_e_max << "  d_half "
            << p.gemm_curve_d_half << "  memory-bound " << p.memory_bound_efficiency << "\n";
  if (!fit.rows_not_fitted.empty())
    std::cout << "  " << fit.rows_not_fitted.size()
              << " mixture-of-experts rows predicted with the profile; they fit no GEMM or stack parameter\n";
  if (!fit.moe_host_rows.empty())
    std::cout << "  host time per MoE layer and micro-batch " << fmt(p.moe_layer_host_s * 1e3, 1)
              << " ms (fitted on " << fit.moe_host_rows.size() << " mixture-of-experts rows of every GPU)\n";
  TextTable t({"stack", "scale", "rows"});
  for (const auto& [k, s] : p.frameworks) {
    const auto it = fit.stacks.find(k);
    t.add_row({k, fmt(s.compute_efficiency_scale, 3),
               it == fit.stacks.end() ? "prior (< 3 rows)" : std::to_string(it->second.rows)});
  }
  std::cout << t.str() << "in-sample mean |error| " << fmt(fit.in_sample.mean_abs_error_pct, 2)
            << "%   max " << fmt(fit.in_sample.max_abs_error_pct, 2) << "%\nwrote " << a.out
            << '\n';
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* sub = app.add_subcommand(
      "fit", "fit a GPU profile's efficiency parameters to the validation corpus");
  sub->add_option("--runs", args->runs,
                  "corpus directories or files (default: the project's validation/runs)");
  sub->add_option("--exclude-source", args->exclude,
                  "leave this source (or source group) out of the fit; repeatable");
  sub->add_option("--profile", args->profile,
                  "the profile to fit (preset name or file): its rows are those of clusters "
                  "using it; overlap and memory reserve are kept");
  sub->add_flag("--residuals", args->residuals,
                "instead of a profile, the residual table of the prediction intervals: every source "
                "predicted by profiles fitted on the others (presets/residuals/corpus.json)");
  sub->add_option("--out", args->out, "where to write the fitted profile (or residual table)")->required();
  sub->add_option("--date", args->date, "provenance date, YYYY-MM-DD (default: today, UTC)");
  sub->callback([args] { run_fit(*args); });
}

}  // namespace parallax::cli
