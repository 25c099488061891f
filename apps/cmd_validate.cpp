// parallax validate: predict every published run and print measured vs predicted.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/costmodel/validation.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct ValidateArgs {
  std::string runs;  // default: the project's validation/published_runs.json
  std::string profile;
  bool json = false;
};

nlohmann::json report_json(const ValidationReport& rep) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ValidationRow& r : rep.rows) {
    rows.push_back({{"id", r.id},
                    {"convention", r.convention},
                    {"framework", r.framework},
                    {"measured_tflops_per_gpu", r.measured_tflops_per_gpu},
                    {"predicted_tflops_per_gpu", r.predicted_tflops_per_gpu},
                    {"measured_iteration_time_s", r.measured_iteration_time_s},
                    {"predicted_iteration_time_s", r.predicted_iteration_time_s},
                    {"error_pct", r.error_pct},
                    {"schedule", to_string(r.plan.schedule)},
                    {"vpp", r.plan.vpp},
                    {"filled", r.filled},
                    {"fits", r.fits}});
  }
  return {{"rows", rows},
          {"mean_abs_error_pct", rep.mean_abs_error_pct},
          {"max_abs_error_pct", rep.max_abs_error_pct}};
}

// The project's copy: beside the working directory, or beside the binary (build/parallax).
std::string default_runs_path() {
  const std::string rel = "validation/published_runs.json";
  if (std::filesystem::exists(rel)) return rel;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = exe.parent_path().parent_path() / rel;
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return rel;  // read_json_file reports it missing
}

void run_validate(const ValidateArgs& args) {
  ValidateArgs a = args;
  if (a.runs.empty()) a.runs = default_runs_path();
  const nlohmann::json runs = read_json_file(a.runs);
  std::optional<EfficiencyProfile> prof;
  if (!a.profile.empty()) prof = load_profile(a.profile);
  const ValidationReport rep = validate_runs(runs, a.runs, prof);
  if (a.json) {
    std::cout << report_json(rep).dump(2) << '\n';
    return;
  }
  TextTable t({"run", "convention", "measured", "predicted", "error", "schedule", "fits"});
  for (const ValidationRow& r : rep.rows) {
    std::string sched = to_string(r.plan.schedule);
    if (r.plan.vpp > 1) sched += " vpp=" + std::to_string(r.plan.vpp);
    if (!r.filled.empty()) sched += " (chosen)";
    t.add_row({r.id, r.convention, fmt(r.measured_tflops_per_gpu, 1),
               fmt(r.predicted_tflops_per_gpu, 1), fmt(r.error_pct, 1) + "%", sched,
               r.fits ? "yes" : "NO"});
  }
  std::cout << "Published runs vs prediction (TFLOP/s per GPU in each row's convention)\n\n"
            << t.str() << "\nmean |error| " << fmt(rep.mean_abs_error_pct, 2) << "%   max |error| "
            << fmt(rep.max_abs_error_pct, 2) << "%   (" << rep.rows.size() << " runs)\n"
            << "(chosen) = the source did not publish the schedule; the fastest Megatron-LM could "
               "run was used.\n";
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand("validate", "reproduce published training runs");
  sub->add_option("--runs", args->runs,
                  "published-runs JSON file (default: validation/published_runs.json)");
  sub->add_option("--profile", args->profile,
                  "efficiency profile for every row (default: each cluster's)");
  sub->add_flag("--json", args->json, "print JSON");
  sub->callback([args] { run_validate(*args); });
}

}  // namespace parallax::cli
