// parallax simulate: one iteration of one plan, event by event over its schedule table
// (docs/design.md §6), next to the analytic prediction; optionally a Chrome trace, the schedule table
// or a text timeline.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/simulator/simulate.hpp"
#include "parallax/simulator/trace.hpp"
#include "plan_options.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct SimulateArgs {
  PlanOptions plan;
  bool json = false;
  std::string trace;
  bool schedule_only = false;
  bool timeline = false;
  int width = 100;
};

std::string plan_summary(const PlanSpec& p) {
  std::string s =
      "tp=" + std::to_string(p.tp) + (p.cp > 1 ? " cp=" + std::to_string(p.cp) : "") + " pp=" +
      std::to_string(p.pp) + " dp=" + std::to_string(p.dp);
  if (p.vpp > 1) s += " vpp=" + std::to_string(p.vpp);
  if (p.microbatch_group != 0) s += " group=" + std::to_string(p.microbatch_group);
  s += " mbs=" + std::to_string(p.micro_batch) + " m=" + std::to_string(p.num_micro_batches);
  s += " schedule=";
  s += to_string(p.schedule);
  return s;
}

// Every rank when there are few; otherwise the first two, the middle and the last two.
std::vector<size_t> shown_ranks(size_t n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (n <= 8 || i < 2 || i == n / 2 || i + 2 >= n) out.push_back(i);
  }
  return out;
}

nlohmann::json result_json(const SimResult& r, const Prediction& pr, const Resolved& res) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankResult& rr = r.ranks[i];
    ranks.push_back({{"rank", i},
                     {"busy_s", rr.busy_s},
                     {"idle_s", rr.idle_s},
                     {"bubble_s", rr.bubble_s},
                     {"send_wait_s", rr.send_wait_s},
                     {"busy_fraction", rr.busy_fraction},
                     {"idle_fraction", rr.idle_fraction},
                     {"bubble_fraction", rr.bubble_fraction},
                     {"bubble_ratio", rr.bubble_ratio},
                     {"last_backward_end_s", rr.last_backward_end_s},
                     {"end_s", rr.end_s},
                     {"peak_activation_bytes", rr.peak_activation_bytes},
                     {"peak_bytes", rr.peak_bytes}});
  }
  return {{"iteration_time_s", r.iteration_time_s},
          {"analytic_iteration_time_s", pr.iteration_time_s},
          {"pipeline_flush_s", r.pipeline_flush_s},
          {"events", r.events},
          {"steps", r.steps},
          {"transfers", r.transfers},
          {"ranks", ranks},
          {"plan", to_json(res.file.plan)},
          {"gpus", res.file.gpus},
          {"profile", res.profile.name}};
}

void print_text(const SimResult& r, const Prediction& pr, const Resolved& res) {
  const PlanFile& f = res.file;
  std::cout << "model    " << f.model.name << " on " << f.gpus << " " << f.cluster.gpu.name
            << " GPUs (" << f.cluster.name << "), profile " << res.profile.name << "\n"
            << "plan     " << plan_summary(f.plan) << "\n\n"
            << "simulated iteration   " << fmt_seconds(r.iteration_time_s) << "  (analytic "
            << fmt_seconds(pr.iteration_time_s) << ", "
            << fmt_pct((r.iteration_time_s - pr.iteration_time_s) / pr.iteration_time_s)
            << " apart)\n"
            << "pipeline flush        " << fmt_seconds(r.pipeline_flush_s) << "\n"
            << "events                " << r.events << " (" << r.steps << " steps, " << r.transfers
            << " transfers)\n\n";
  TextTable t({"rank", "busy", "idle", "bubble", "bubble/(pp-1)/m ref", "send wait",
               "peak activations", "peak memory"});
  const double ref = static_cast<double>(f.plan.pp - 1) /
                     static_cast<double>(f.plan.num_micro_batches * f.plan.vpp);
  const size_t n = r.ranks.size();
  size_t prev = 0;
  for (size_t i : shown_ranks(n)) {
    if (i > prev + 1) t.add_row({"...", "", "", "", "", "", "", ""});
    prev = i;
    const RankResult& rr = r.ranks[i];
    t.add_row({std::to_string(i), fmt_pct(rr.busy_fraction), fmt_pct(rr.idle_fraction),
               fmt_pct(rr.bubble_fraction), fmt(rr.bubble_ratio, 4) + " / " + fmt(ref, 4),
               fmt_seconds(rr.send_wait_s), fmt_gb(rr.peak_activation_bytes),
               fmt_gb(rr.peak_bytes)});
  }
  std::cout << t.str();
}

void run_simulate(const SimulateArgs& a) {
  const Resolved res = resolve(a.plan);
  const PlanSpec& p = res.file.plan;
  if (a.schedule_only) {
    const ScheduleTable t = make_schedule(p.schedule, p.pp, p.vpp, p.num_micro_batches, p.microbatch_group);
    check_schedule(t);
    std::cout << format_schedule(t);
    return;
  }
  const SimInputs in =
      make_sim_inputs(res.file.model, res.file.cluster, res.file.job, p, res.profile);
  const SimResult r = simulate(in);
  const Prediction pr = predict(res.file.model, res.file.cluster, res.file.job, p, res.profile);
  if (!a.trace.empty()) write_chrome_trace(r, a.trace);
  if (a.json) {
    std::cout << result_json(r, pr, res).dump(2) << '\n';
    return;
  }
  if (a.timeline) {
    std::cout << "timeline over " << fmt_seconds(r.iteration_time_s)
              << " (F forward, B backward, f/b their TP comm, o optimizer, . idle)\n"
              << text_timeline(r, a.width) << '\n';
  }
  print_text(r, pr, res);
  if (!a.trace.empty()) std::cout << "\ntrace written to " << a.trace << '\n';
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "simulate one iteration of one plan event by event (per-rank timeline, trace)");
  add_plan_options(*sub, args->plan);
  sub->add_flag("--json", args->json, "print JSON (iteration_time_s and per-rank figures)");
  sub->add_option("--trace", args->trace,
                  "write a Chrome/Perfetto trace (JSON) of the iteration to this file");
  sub->add_flag("--schedule-only", args->schedule_only,
                "print the schedule table (one line per pipeline rank) and stop");
  sub->add_flag("--timeline", args->timeline, "draw a per-rank text timeline");
  sub->add_option("--width", args->width, "timeline width in characters")
      ->check(CLI::Range(10, 1000))
      ->capture_default_str();
  sub->callback([args] { run_simulate(*args); });
}

}  // namespace parallax::cli
