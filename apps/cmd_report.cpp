// parallax report: the capacity-planning report (HTML with inline SVG charts, Markdown or JSON).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "parallax/reports/report.hpp"
#include "parallax/version.hpp"
#include "plan_options.hpp"
#include "search_options.hpp"

namespace parallax::cli {
namespace {

struct ReportArgs {
  PlanOptions job;
  SearchFlags search;
  std::string format = "html";
  std::string out;
  std::string scaling_gpus;  // comma-separated; default doubling up to the cluster
  int64_t top = 10;
  std::string interval_level = "0.8";
};

void run_report(const ReportArgs& a) {
  const ResolvedJob rj = resolve_job(a.job);
  ReportInputs in;
  in.planner = planner_inputs(rj, a.search);
  in.top = a.top;
  in.version = kVersion;
  in.interval_level = parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  if (!a.scaling_gpus.empty()) {
    std::stringstream ss(a.scaling_gpus);
    std::string item;
    while (std::getline(ss, item, ',')) {
      in.gpu_counts.push_back(parse_int("--scaling-gpus", item, 1, in.planner.given_cluster().total_gpus()));
    }
  }
  const bool tty = isatty(fileno(stderr)) != 0;
  const ReportData d = build_report(in, [tty](const std::string& step) {
    if (tty) std::fprintf(stderr, "report: %s...\n", step.c_str());
  });
  std::string text;
  if (a.format == "html") {
    text = render_html(d);
  } else if (a.format == "md") {
    text = render_markdown(d);
  } else {
    text = render_json(d).dump(2) + "\n";
  }
  if (a.out.empty()) {
    std::cout << text;
  } else {
    write_file_atomic(a.out, text);
    if (tty) std::fprintf(stderr, "report: wrote %s\n", a.out.c_str());
  }
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand("report", "capacity-planning report: HTML with charts, Markdown or JSON");
  add_job_options(*sub, args->job);
  add_search_flags(*sub, args->search);
  sub->add_option("--format", args->format, "html | md | json")
      ->check(CLI::IsMember({"html", "md", "json"}))
      ->capture_default_str();
  sub->add_option("--out", args->out, "write to this file (atomically) instead of stdout");
  sub->add_option("--scaling-gpus", args->scaling_gpus, "GPU counts of the scaling curve, comma-separated");
  sub->add_option("--top", args->top, "plans in the table")->check(CLI::Range(1, 1000))->capture_default_str();
  sub->add_option("--interval-level", args->interval_level,
                  "the prediction intervals' and ties' level, in (0, 1) (docs/predict.md)")
      ->capture_default_str();
  sub->callback([args] { run_report(*args); });
}

}  // namespace parallax::cli
