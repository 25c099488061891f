// parallax capacity: GPUs vs days vs cost for a job's tokens, or the largest model a GPU-hour
// budget trains (the BigScience question).
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "parallax/planner/capacity.hpp"
#include "plan_options.hpp"
#include "prediction_text.hpp"
#include "search_options.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct CapacityArgs {
  PlanOptions job;
  std::string gpus_list;   // "256,512,1024"
  std::string gpus_range;  // "A:B:STEP"
  std::string budget_gpu_hours;
  std::string tokens_per_param = "20";
  std::string max_days = "180";
  std::string family = "megatron-gpt";
  SearchFlags search;
  bool json = false;
  std::string interval_level = "0.8";
  std::string goodput;  // the effective training share; default: the llama3-405b preset's
};

// The goodput the wall-clock days assume: the flag's share, or the preset's with its source.
Goodput goodput_of(const CapacityArgs& a) {
  if (a.goodput.empty()) return load_goodput("llama3-405b");
  Goodput g;
  g.name = "--goodput";
  g.source = "given on the command line";
  g.effective_training_share = parse_number("--goodput", a.goodput, 0.01, 1);
  return g;
}

// A figure proportional to the iteration time (days, GPU-hours, cost) at the interval's ends;
// null for an unbounded end.
nlohmann::json scaled_range(double x, const PredictionInterval& iv) {
  auto end = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  return nlohmann::json::array({end(x * iv.low_ratio), end(x * iv.high_ratio)});
}

// "12.3 (10.1-15.2)": a figure and its range.
std::string with_range(double x, const PredictionInterval& iv, int precision) {
  const double hi = x * iv.high_ratio;
  return fmt(x, precision) + " (" + fmt(x * iv.low_ratio, precision) + "-" +
         (std::isfinite(hi) ? fmt(hi, precision) : std::string("unbounded")) + ")";
}

PredictionInterval interval_of(const ResidualTable& t, const ModelSpec& m, const PlannerInputs& in, const PlanSpec& p,
                               double level) {
  return prediction_interval(t, job_features(m, in.cluster, in.job, p), level);
}

std::vector<int64_t> gpu_counts(const CapacityArgs& a, const ClusterSpec& c) {
  std::vector<int64_t> out;
  const int64_t max = c.total_gpus();
  if (!a.gpus_list.empty() && !a.gpus_range.empty()) {
    throw InputError("command line", "--gpus", "give --gpus or --gpus-range, not both");
  }
  if (!a.gpus_list.empty()) {
    std::stringstream ss(a.gpus_list);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(parse_int("--gpus", item, 1, max));
  } else if (!a.gpus_range.empty()) {
    std::stringstream ss(a.gpus_range);
    std::string lo, hi, step;
    if (!std::getline(ss, lo, ':') || !std::getline(ss, hi, ':') || !std::getline(ss, step, ':')) {
      throw InputError("command line", "--gpus-range", "must be A:B:STEP (got \"" + a.gpus_range + "\")");
    }
    const int64_t l = parse_int("--gpus-range", lo, 1, max);
    const int64_t h = parse_int("--gpus-range", hi, l, max);
    const int64_t s = parse_int("--gpus-range", step, 1, max);
    for (int64_t n = l; n <= h; n += s) out.push_back(n);
  } else {
    for (int64_t n = c.gpus_per_node * 8; n <= max; n *= 2) out.push_back(n);
  }
  if (out.empty()) throw InputError("command line", "--gpus", "no GPU count to plan for");
  return out;
}

void run_sweep(const CapacityArgs& a, const ResolvedJob& rj) {
  if (rj.job.tokens <= 0) {
    throw InputError("command line", "--tokens", "is required (tokens to train) unless --budget-gpu-hours");
  }
  const PlannerInputs in = planner_inputs(rj, a.search);
  const double level = parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  const Goodput goodput = goodput_of(a);
  const ResidualTable residuals = load_residuals();  // parsed once, not per row
  const std::vector<CapacityRow> rows =
      capacity_sweep(in, gpu_counts(a, rj.cluster), rj.job.tokens, rj.job.price_per_gpu_hour_usd);
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const CapacityRow& r : rows) {
      nlohmann::json j = {{"gpus", r.gpus}, {"cluster", r.cluster}, {"knee", r.knee}};
      if (r.best) {
        j["plan"] = to_json(r.best->plan);
        j["prediction"] = to_json(r.best->prediction);
        j["days"] = r.days;
        j["gpu_hours"] = r.gpu_hours;
        // null, not 0, without a price: an unknown cost is not a free one.
        j["cost_usd"] = price_known(rj.job.price_per_gpu_hour_usd) ? nlohmann::json(r.cost_usd)
                                                                    : nlohmann::json(nullptr);
        j["scaling_efficiency"] = r.scaling_efficiency;
        const PredictionInterval iv = interval_of(residuals, in.model, in, r.best->plan, level);
        nlohmann::json& ij = j["interval"] = interval_json(iv, r.best->prediction);
        j["wall_days"] = r.days / goodput.effective_training_share;
        ij["days"] = scaled_range(r.days, iv);
        ij["wall_days"] = scaled_range(r.days / goodput.effective_training_share, iv);
        ij["gpu_hours"] = scaled_range(r.gpu_hours, iv);
        if (price_known(rj.job.price_per_gpu_hour_usd)) ij["cost_usd"] = scaled_range(r.cost_usd, iv);
      } else {
        j["no_plan"] = r.no_plan_reason;
      }
      arr.push_back(j);
    }
    const nlohmann::json g = {{"effective_training_share", goodput.effective_training_share},
                              {"name", goodput.name},
                              {"source", goodput.source}};
    std::cout << nlohmann::json{{"rows", arr}, {"tokens", rj.job.tokens}, {"goodput", g}}.dump(2) << '\n';
    return;
  }
  const std::string pct = fmt(level * 100, 0) + "%";
  TextTable t({"GPUs", "best plan", "Megatron TF/s", "MFU", "days (" + pct + ")", "wall days (" + pct + ")",
               "GPU-hours (" + pct + ")", "cost USD", "scaling", ""});
  std::optional<PredictionInterval> first;
  for (const CapacityRow& r : rows) {
    if (!r.best) {
      t.add_row({std::to_string(r.gpus), r.no_plan_reason, "", "", "", "", "", "", "", ""});
      continue;
    }
    const PlanSpec& p = r.best->plan;
    std::string plan = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) +
                       (p.vpp > 1 ? " vpp" + std::to_string(p.vpp) : "") + " dp" +
                       std::to_string(p.dp) + " mbs" + std::to_string(p.micro_batch) + " " +
                       to_string(p.recompute) + (p.sequence_parallel ? " sp" : "") +
                       (p.zero > 0 ? " zero" + std::to_string(p.zero) : "");
    const PredictionInterval iv = interval_of(residuals, in.model, in, p, level);
    if (!first) first = iv;
    t.add_row({std::to_string(r.gpus), plan, fmt(r.best->prediction.megatron_tflops_per_gpu, 1),
               fmt_pct(r.best->prediction.mfu), with_range(r.days, iv, 1),
               with_range(r.days / goodput.effective_training_share, iv, 1), with_range(r.gpu_hours, iv, 0),
               price_known(rj.job.price_per_gpu_hour_usd) ? fmt(r.cost_usd, 0) : "-",
               fmt_pct(r.scaling_efficiency),
               r.knee ? "<- knee (< 80%)" : ""});
  }
  std::cout << inputs_header(rj.model, rj.cluster, rows.back().gpus, rj.job, rj.profile.name)
            << "tokens   " << rj.job.tokens << "\n\n"
            << t.str()
            << "scaling = tokens/s per GPU relative to the first row; the knee is where it first "
               "falls below 80%.\n";
  std::cout << "wall days = days / " << fmt(goodput.effective_training_share, 2)
            << ", the share of wall time spent training (" << goodput.name << ": " << goodput.source
            << "); --goodput to change it. GPU-hours and cost are of the training time.\n";
  if (first) std::cout << "first row's " << interval_note(*first);
  // A count that does not take whole NVLink domains is planned on them in SLURM segments.
  for (const CapacityRow& r : rows) {
    if (r.cluster != rj.cluster.name) std::cout << r.gpus << " GPUs: planned on " << r.cluster << "\n";
  }
}

void run_budget(const CapacityArgs& a, const ResolvedJob& rj) {
  BudgetInputs in;
  in.planner = planner_inputs(rj, a.search);
  in.budget_gpu_hours = parse_number("--budget-gpu-hours", a.budget_gpu_hours, 1, 1e12);
  in.tokens = rj.job.tokens;
  in.tokens_per_param = parse_number("--tokens-per-param", a.tokens_per_param, 1e-3, 1e6);
  in.max_days = parse_number("--max-days", a.max_days, 1e-3, 1e5);
  in.family = a.family;
  const double level = parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  const ResidualTable residuals = load_residuals();
  const BudgetAnswer ans = budget_search(in);
  if (!ans.answer) {
    throw InputError("command line", "--budget-gpu-hours",
                     "no model of family " + a.family + " trains within the budget on " +
                         rj.cluster.name + " in " + a.max_days + " days");
  }
  const BudgetCandidate& c = *ans.answer;
  if (a.json) {
    nlohmann::json j = {{"params", c.member.params},
                        {"model", to_json(c.member.model)},
                        {"tokens", c.tokens},
                        {"gpus", c.gpus},
                        {"gpu_hours", c.gpu_hours},
                        {"days", c.days},
                        {"plan", to_json(c.plan->plan)},
                        {"prediction", to_json(c.plan->prediction)},
                        {"budget_gpu_hours", in.budget_gpu_hours}};
    const PredictionInterval iv = interval_of(residuals, c.member.model, in.planner, c.plan->plan, level);
    j["interval"] = interval_json(iv, c.plan->prediction);
    j["interval"]["days"] = scaled_range(c.days, iv);
    j["interval"]["gpu_hours"] = scaled_range(c.gpu_hours, iv);
    if (ans.next_larger) {
      j["next_larger"] = {{"params", ans.next_larger->member.params},
                          {"gpu_hours", ans.next_larger->gpu_hours},
                          {"gpus", ans.next_larger->gpus}};
    }
    std::cout << j.dump(2) << '\n';
    return;
  }
  const ModelSpec& m = c.member.model;
  const PredictionInterval budget_iv = interval_of(residuals, c.member.model, in.planner, c.plan->plan, level);
  std::cout << "budget   " << fmt(in.budget_gpu_hours, 0) << " GPU-hours on " << rj.cluster.name
            << " (" << rj.cluster.gpu.name << "), family " << a.family << "\n\n"
            << "largest model that finishes: " << fmt(c.member.params / 1e9, 1) << "B parameters ("
            << m.layers << " layers, hidden " << m.hidden << ", " << m.heads << " heads)\n"
            << "tokens " << fmt(c.tokens / 1e9, 1) << "B on " << c.gpus << " GPUs: "
            << with_range(c.days, budget_iv, 1) << " days, " << with_range(c.gpu_hours, budget_iv, 0)
            << " GPU-hours (in brackets, the " << fmt(level * 100, 0) << "% interval)\n"
            << "plan   " << plan_line(c.plan->plan) << "\n";
  if (ans.next_larger) {
    std::cout << "next larger: " << fmt(ans.next_larger->member.params / 1e9, 1) << "B needs "
              << fmt(ans.next_larger->gpu_hours, 0) << " GPU-hours\n";
  }
}

void run_capacity(const CapacityArgs& a) {
  PlanOptions o = a.job;
  o.gpus = "1";  // not used: capacity plans for many GPU counts
  const ResolvedJob rj = resolve_job(o);
  if (!a.budget_gpu_hours.empty()) {
    run_budget(a, rj);
  } else {
    run_sweep(a, rj);
  }
}

}  // namespace

void add_capacity_command(CLI::App& app) {
  auto args = std::make_shared<CapacityArgs>();
  CLI::App* sub = app.add_subcommand(
      "capacity", "GPUs vs days vs cost for a job, or the largest model a GPU-hour budget trains");
  add_job_options(*sub, args->job, false);
  sub->add_option("--gpus", args->gpus_list, "GPU counts, comma-separated (default: doubling)");
  sub->add_option("--gpus-range", args->gpus_range, "GPU counts A:B:STEP");
  sub->add_option("--budget-gpu-hours", args->budget_gpu_hours,
                  "answer: the largest model of the family that trains within this budget");
  sub->add_option("--interval-level", args->interval_level,
                  "the days' and GPU-hours' interval level, in (0, 1) (docs/predict.md)")
      ->capture_default_str();
  sub->add_option("--goodput", args->goodput,
                  "the share of wall time spent training, in (0, 1], for the wall-clock days (default 0.9: "
                  "Llama 3 405B's, presets/goodput/llama3-405b.json)");
  sub->add_option("--tokens-per-param", args->tokens_per_param,
                  "tokens per parameter when --tokens is not given")
      ->capture_default_str();
  sub->add_option("--max-days", args->max_days, "longest run considered in budget mode")
      ->capture_default_str();
  sub->add_option("--family", args->family, "model family preset for budget mode")
      ->capture_default_str();
  add_search_flags(*sub, args->search);
  sub->add_flag("--json", args->json, "print JSON");
  sub->callback([args] { run_capacity(*args); });
}

}  // namespace parallax::cli
