// parallax compare --measurements m.json [--measurements ...] [--profile p.json] [--json]:
// the prediction of each executed plan next to its measurement, per iteration, per op class and
// per collective group, with the % error; with several runs, the median and max iteration error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/core/atomic_file.hpp"

namespace parallax::cli {

namespace {

struct CompareOptions {
  std::vector<std::string> measurements;
  std::string profile;
  bool json = false;
  std::string out;
};

int compare_command(const CompareOptions& o) {
  std::vector<std::pair<std::string, calib::Comparison>> all;
  std::string profile_name;
  for (const std::string& path : o.measurements) {
    const calib::Measurements m = calib::read_measurements(path);
    const EfficiencyProfile prof = load_profile(o.profile.empty() ? m.plan.cluster.profile : o.profile);
    profile_name = prof.name;
    all.emplace_back(path, calib::compare(m, prof));
  }
  std::vector<double> errs;
  for (const auto& [path, c] : all) errs.push_back(std::fabs(c.iteration_error()));
  std::vector<double> sorted = errs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  const double worst = sorted.back();
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [path, c] : all) {
    nlohmann::json rows = nlohmann::json::array();
    for (const calib::CompareRow& r : c.rows)
      rows.push_back({{"kind", r.kind}, {"name", r.name}, {"predicted_s", r.predicted_s},
                      {"measured_s", r.measured_s}, {"error", r.error()}, {"note", r.note}});
    j.push_back({{"measurements", path}, {"plan", c.plan}, {"rows", rows}});
  }
  const nlohmann::json doc = {{"profile", profile_name}, {"runs", j},
                              {"median_abs_iteration_error", median},
                              {"max_abs_iteration_error", worst}};
  if (!o.out.empty()) write_file_atomic(o.out, doc.dump(1) + "\n");
  if (o.json) {
    std::printf("%s\n", doc.dump(1).c_str());
    return 0;
  }
  std::printf("profile %s\n", profile_name.c_str());
  for (const auto& [path, c] : all) {
    std::printf("\n%s  (%s)\n", c.plan.c_str(), path.c_str());
    std::printf("  %-11s %-16s %12s %12s %9s\n", "kind", "name", "predicted ms", "measured ms", "error");
    for (const calib::CompareRow& r : c.rows)
      std::printf("  %-11s %-16s %12.3f %12.3f %+8.1f%%%s%s\n", r.kind.c_str(), r.name.c_str(),
                  r.predicted_s * 1e3, r.measured_s * 1e3, 100 * r.error(), r.note.empty() ? "" : "  ",
                  r.note.c_str());
  }
  std::printf("\niteration time over %zu runs: median |error| %.1f%%, max |error| %.1f%%\n",
              all.size(), 100 * median, 100 * worst);
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Predicted vs measured for executed runs: per iteration, op class and collective");
  cmd->add_option("--measurements", o->measurements, "measurements.json of parallax run (repeatable)")
      ->required()
      ->take_all();
  cmd->add_option("--profile", o->profile, "profile preset or file (default: the run's cluster's)");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--out", o->out, "also write the JSON here");
  cmd->callback([o, &exit_code] { exit_code = compare_command(*o); });
}

}  // namespace parallax::cli
