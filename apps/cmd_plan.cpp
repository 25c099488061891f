// parallax plan: search every plan that can run, rank them, explain, and write the winner.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <set>

#include "commands.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "parallax/inputs/recipe.hpp"
#include "parallax/inputs/search_file.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/planner/sensitivity.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "plan_csv.hpp"
#include "plan_options.hpp"
#include "plan_measured.hpp"
#include "plan_shortlist.hpp"
#include "prediction_text.hpp"
#include "search_options.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

// The winner's expert-parallel traffic: one dispatch all-to-all and what all of them add.
std::string all_to_all_text(const ModelSpec& m, const RankedPlan& win) {
  const Prediction& pr = win.prediction;
  char rows[160];
  if (deduplicating(win.plan.moe_dispatcher))
    std::snprintf(rows, sizeof rows, "%s: one row of hidden %lld per routed token and node or rank holding any of its experts",
                  to_string(win.plan.moe_dispatcher), static_cast<long long>(m.hidden));
  else
    std::snprintf(rows, sizeof rows, "alltoall: top_k %lld rows of hidden %lld per routed token",
                  static_cast<long long>(m.moe.top_k), static_cast<long long>(m.hidden));
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "expert all-to-all: ep %lld; one dispatch (or combine) of one MoE layer and "
                "micro-batch sends %.1f MiB per rank (%s) in %.3f ms on the slowest group; 4 per "
                "MoE layer and micro-batch (dispatch and combine, forward and backward) on %lld MoE "
                "layers: %.3f s of the iteration",
                static_cast<long long>(win.plan.ep), pr.ep_all_to_all_bytes / 1048576.0, rows,
                pr.ep_all_to_all_s * 1e3, static_cast<long long>(m.moe_layers()), pr.time.ep_comm_s);
  return buf;
}

struct PlanArgs {
  PlanOptions job;
  int64_t top = 10;
  int64_t simulate_top = 32;
  bool explain = false;
  bool sensitivity = false;
  bool json = false;
  std::string interval_level = "0.8";
  SearchFlags search;
  std::string out;
  std::string compare;  // a plan file to compare the winner with
  int threads = 0;
  std::string search_file;  // plan --search: the job and what to search, in a YAML/JSON file
  std::string csv;          // every candidate with its fate, to this file ("-": stdout)
  std::set<std::string> given;  // recipe keys of the flags typed on the command line
  ShortlistArgs shortlist;
  std::vector<std::string> measured;  // the shortlist's runs read back
};

// A progress bar on stderr when it is a terminal and the search has run for over a second.
Progress progress_bar() {
  if (!isatty(fileno(stderr))) return {};
  auto started = std::make_shared<double>(-1);
  auto ticks = std::make_shared<int>(0);
  return [started, ticks](int64_t done, int64_t total) {
    if (++*ticks <= 10 && done < total) return;  // ~1 s at 100 ms per tick
    std::fprintf(stderr, "\rplanning: %lld / %lld plans predicted", static_cast<long long>(done),
                 static_cast<long long>(total));
    if (done >= total) std::fprintf(stderr, "\n");
  };
}

// "2=": the plan ranked 2nd, tied with the winner (TieRule).
std::string rank_text(const SearchResult& res, size_t i, const TieRule& ties) {
  const bool tied = i > 0 && ties.tied(res.plans[i].time_s, res.plans.front().time_s);
  return std::to_string(i + 1) + (tied ? "=" : "");
}

// What "=" means, with the figure it rests on.
std::string ties_note(const TieRule& ties) {
  if (!std::isfinite(ties.log_ratio))
    return "= tied with #1: not marked, fewer than " + std::to_string(ties.needed) + " sweeps of the corpus to say\n";
  return "= tied with #1: within " + fmt((std::exp(ties.log_ratio) - 1) * 100, 1) + "% of its time, the " +
         fmt(ties.level * 100, 0) + "% error of the ratio of two plans' times (" + std::to_string(ties.pairs) +
         " pairs of plans in " + std::to_string(ties.sweeps) + " sweeps of the corpus, predicted out of sample): "
         "which of them is faster, the model cannot say; measure them (docs/predict.md)\n";
}

std::string plans_table(const SearchResult& res, int64_t top, const TieRule& ties) {
  TextTable t({"#", "tp", "cp", "pp", "vpp", "dp", "ep", "mbs", "m", "recompute", "sp", "zero", "iter s",
               "model TF/s", "Megatron TF/s", "MFU", "peak GB", "headroom GB", "bubble"});
  for (int64_t i = 0; i < top && i < static_cast<int64_t>(res.plans.size()); ++i) {
    const RankedPlan& r = res.plans[static_cast<size_t>(i)];
    const PlanSpec& p = r.plan;
    const Prediction& pr = r.prediction;
    // Throughput at the ranking time (the simulator's, when refined).
    const double scale = r.throughput_scale();
    t.add_row({rank_text(res, static_cast<size_t>(i), ties), std::to_string(p.tp), std::to_string(p.cp), std::to_string(p.pp),
               // "3/10": vpp 3, interleaved in micro-batch groups of 10 (Megatron-Core).
               std::to_string(p.vpp) + (p.microbatch_group != 0 ? "/" + std::to_string(p.microbatch_group) : ""),
               // "8/1": ep 8 with expert tensor parallelism 1 (etp 0, the default, is tp).
               std::to_string(p.dp), std::to_string(p.ep) + (p.etp != 0 ? "/" + std::to_string(p.etp) : ""),
               std::to_string(p.micro_batch),
               std::to_string(p.num_micro_batches), to_string(p.recompute),
               p.sequence_parallel ? "on" : "off", std::to_string(p.zero),
               fmt(r.time_s, 3) + (r.refined ? "" : "*"), fmt(pr.model_tflops_per_gpu * scale, 1),
               fmt(pr.megatron_tflops_per_gpu * scale, 1), fmt_pct(pr.mfu * scale), fmt(pr.peak_bytes / 1e9, 1),
               fmt(r.headroom_bytes() / 1e9, 1), fmt_pct(pr.time.bubble_s / pr.iteration_time_s)});
  }
  return t.str();
}

std::string rejections_text(const SearchResult& res) {
  std::string s = "rejected by reason:";
  for (const auto& [k, v] : res.rejected_by_reason) s += " " + k + " " + std::to_string(v) + ";";
  s += "\nrejected by rule:\n";
  for (const auto& [k, v] : res.rejected_by_rule) s += "  " + k + ": " + std::to_string(v) + "\n";
  return s;
}

// Each plan's prediction interval (intervals.hpp): the corpus rows like the job and the plan.
using IntervalOf = std::function<PredictionInterval(const PlanSpec&)>;

nlohmann::json search_json(const SearchResult& res, int64_t top, const IntervalOf& interval_of,
                           const TieRule& ties) {
  nlohmann::json plans = nlohmann::json::array();
  for (int64_t i = 0; i < top && i < static_cast<int64_t>(res.plans.size()); ++i) {
    const RankedPlan& r = res.plans[static_cast<size_t>(i)];
    nlohmann::json j = to_json(r.prediction);
    j["interval"] = interval_json(interval_of(r.plan), r.prediction);
    j["tied_with_winner"] = i > 0 && ties.tied(r.time_s, res.plans.front().time_s);
    j["plan"] = to_json(r.plan);
    j["ranking_time_s"] = r.time_s;
    j["refined_by_simulator"] = r.refined;
    plans.push_back(j);
  }
  nlohmann::json j;
  j["plans"] = plans;
  j["ties"] = {{"level", ties.level},
               {"ratio", std::isfinite(ties.log_ratio) ? nlohmann::json(std::exp(ties.log_ratio)) : nlohmann::json()},
               {"sweeps", ties.sweeps},
               {"pairs", ties.pairs},
               {"sweeps_needed", ties.needed}};
  j["plans_considered"] = res.considered;
  j["plans_evaluated"] = res.evaluated;
  j["plans_fitting"] = res.plans.size();
  j["plans_rejected"] = res.rejected_by_rule;
  j["plans_rejected_by_reason"] = res.rejected_by_reason;
  j["search_time_s"] = res.search_time_s;
  return j;
}

// --explain: the rejections, the winner's all-to-all, and why it beats #2, or that the two are tied.
std::string explain_text(const SearchResult& res, const ModelSpec& m, const TieRule& ties) {
  const RankedPlan& win = res.plans.front();
  std::string s = rejections_text(res);
  if (win.prediction.ep_all_to_all_bytes > 0) s += all_to_all_text(m, win) + "\n";
  if (res.plans.size() < 2) return s;
  s += "winner vs #2: " + explain_difference(win, res.plans[1]) + "\n";
  if (ties.tied(res.plans[1].time_s, win.time_s))
    s += "  tied: #2 is within the " + fmt(ties.level * 100, 0) + "% error of the ratio of two plans' times (" +
         fmt((std::exp(ties.log_ratio) - 1) * 100, 1) + "%): which is faster, a short measurement run should say\n";
  return s;
}

// The plan of --compare's file, predicted on the search's inputs (none without --compare).
std::optional<RankedPlan> compared_plan(const std::string& path, const PlannerInputs& in,
                                        const Topology& topo) {
  if (path.empty()) return std::nullopt;
  const PlanFile f = read_plan_file(read_json_file(path), path);
  RankedPlan r;
  r.plan = f.plan;
  r.prediction = predict(in.model, topo, in.job, f.plan, in.profile);
  r.time_s = r.prediction.iteration_time_s;
  return r;
}

nlohmann::json sensitivity_json(const SensitivityReport& sens) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : sens.cases) {
    cases.push_back({{"perturbation", c.perturbation.name},
                     {"winner_rank", c.winner_rank + 1},
                     {"best_plan", to_json(c.best.plan)},
                     {"best_iteration_time_s", c.best.time_s}});
  }
  return {{"cases", cases}, {"winner_stays_top3", sens.winner_stays_top3}};
}

// The job's inputs; with --measured, the profile refitted on the executed runs among them.
PlannerInputs plan_inputs(const PlanArgs& a, std::vector<MeasuredPlan>& measured) {
  PlannerInputs in =
      a.search_file.empty()
          ? planner_inputs(resolve_job(a.job), a.search)
          : search_file_inputs(a.search_file, read_search_file(a.search_file, a.job, a.search, a.given),
                               a.given);
  in.top_k = a.simulate_top;
  in.threads = a.threads;
  in.options.record_candidates = !a.csv.empty();
  // Every measured file is read before anything is written.
  measured = read_measured(a.measured, PlanFile{in.model, in.cluster, in.job, {}, in.gpus});
  std::vector<calib::Measurements> runs;
  for (const MeasuredPlan& m : measured)
    if (m.run) runs.push_back(*m.run);
  if (!runs.empty()) in.profile = calib::refit_from_measurements(in.profile, runs);
  return in;
}

// What one plan command found, for its outputs.
struct PlanOutcome {
  std::vector<MeasuredPlan> measured;
  PlannerInputs in;
  SearchResult res;
  double level = 0;
  ResidualTable residuals;
  TieRule ties;
  IntervalOf interval_of;
  std::optional<Shortlist> shortlist;
  std::optional<FinalRanking> final;
  std::optional<RankedPlan> compared;
  std::optional<SensitivityReport> sens;
  const PlanSpec& chosen() const { return final ? final->plans.front().ranked.plan : res.plans.front().plan; }
};

void print_json(const PlanArgs& a, const PlanOutcome& o) {
  const RankedPlan& win = o.res.plans.front();
  nlohmann::json j = search_json(o.res, a.top, o.interval_of, o.ties);
  if (o.compared) j["compared"] = {{"plan", to_json(o.compared->plan)},
                                   {"iteration_time_s", o.compared->time_s},
                                   {"why_winner_is_faster", explain_difference(win, *o.compared)}};
  if (o.sens) j["sensitivity"] = sensitivity_json(*o.sens);
  if (o.shortlist) j["shortlist"] = shortlist_json(*o.shortlist, o.res);
  if (o.final) j["final"] = final_json(*o.final, static_cast<size_t>(a.top));
  std::cout << j.dump(2) << '\n';
}

void print_text(const PlanArgs& a, const PlanOutcome& o) {
  const PlannerInputs& in = o.in;
  const SearchResult& res = o.res;
  const RankedPlan& win = res.plans.front();
  const PredictionInterval win_interval = o.interval_of(win.plan);
  std::cout << inputs_header(in.model, in.cluster, in.gpus, in.job, in.profile.name) << '\n'
            << "top plans of " << res.plans.size() << " that fit (" << res.evaluated
            << " admitted and predicted, " << res.considered << " considered, top "
            << in.top_k << " simulated, in " << fmt(res.search_time_s, 3)
            << " s; * = analytic time, not simulated; vpp V/N = interleaved in micro-batch groups of N; ep E/T = expert tensor parallelism T)\n"
            << plans_table(res, a.top, o.ties) << ties_note(o.ties) << '\n'
            << "winner: " << plan_line(win.plan) << "\n\n"
            << throughput_table(win.prediction, &win_interval) << interval_note(win_interval) << '\n'
            << time_table(win.prediction) << '\n'
            << memory_section(win.prediction, win.plan);
  if (o.shortlist) std::cout << '\n' << shortlist_text(*o.shortlist, res, a.shortlist);
  if (o.final) std::cout << '\n' << final_text(*o.final, static_cast<size_t>(a.top));
  if (a.explain) std::cout << '\n' << explain_text(res, in.model, o.ties);
  if (o.compared) {
    std::cout << "\nwinner vs " << a.compare << ": " << explain_difference(win, *o.compared) << '\n';
  }
  if (o.sens) {
    TextTable t({"perturbation", "winner's rank", "best plan under it", "iter s"});
    for (const auto& c : o.sens->cases) {
      t.add_row({c.perturbation.name, std::to_string(c.winner_rank + 1), plan_line(c.best.plan),
                 fmt(c.best.time_s, 3)});
    }
    std::cout << "\nsensitivity (compute, NVLink, network +-20%):\n"
              << t.str() << "winner stays in the top 3 in every case: "
              << (o.sens->winner_stays_top3 ? "yes" : "NO") << '\n';
  }
  if (!a.out.empty()) std::cout << "\nwrote " << a.out << (o.final ? " (the final ranking's first)" : "") << '\n';
}

void plan_and_print(const PlanArgs& a) {
  PlanOutcome o;
  o.in = plan_inputs(a, o.measured);
  const PlannerInputs& in = o.in;
  const Topology topo(in.cluster);
  o.res = search_plans(in, topo, in.top_k > 0 ? simulator_refiner(in) : Refiner{},
                       a.json ? Progress{} : progress_bar());
  if (!a.csv.empty()) {
    // Written whether or not a plan fits: the rejections are the answer then.
    if (a.csv == "-") std::cout << candidates_csv(o.res);
    else write_file_atomic(a.csv, candidates_csv(o.res), "--csv");
    if (a.csv == "-") return;
  }
  if (a.explain && o.res.plans.empty()) std::cerr << rejections_text(o.res);
  if (o.res.plans.empty()) throw no_plan_error(o.res, in.gpus);

  o.level = parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  o.residuals = load_residuals();
  o.ties = tie_rule(o.residuals, o.level);
  o.interval_of = [&o](const PlanSpec& p) {
    return prediction_interval(o.residuals, job_features(o.in.model, o.in.cluster, o.in.job, p), o.level);
  };
  if (!o.measured.empty()) {
    const auto price = [&](const PlanSpec& p) {
      RankedPlan r{p, predict(in.model, topo, in.job, p, in.profile), 0, false};
      r.time_s = r.prediction.iteration_time_s;
      return r;
    };
    o.final = final_ranking(o.res, o.measured, o.ties, price, o.interval_of);
  }
  if (a.shortlist.k > 0) {
    o.shortlist = make_shortlist(o.res, o.ties, static_cast<size_t>(a.shortlist.k));
    write_shortlist(*o.shortlist, o.res, in, a.shortlist);
  }
  if (!a.out.empty()) {
    const PlanFile f{in.model, in.cluster, in.job, o.chosen(), in.gpus};
    // After measurements, the file says what the plan is expected to take and how sure that is.
    const nlohmann::json j = o.final ? to_json(f, expectation(*o.final)) : to_json(f);
    write_file_atomic(a.out, j.dump(2) + "\n");
  }
  o.compared = compared_plan(a.compare, in, topo);
  if (a.sensitivity) o.sens = sensitivity_analysis(in, o.res);
  if (a.json) print_json(a, o);
  else print_text(a, o);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand("plan", "search, rank and explain every plan that can run");
  add_job_options(*sub, args->job);
  sub->add_option("--top", args->top, "plans to show")->capture_default_str()->check(CLI::Range(1, 100000));
  sub->add_option("--simulate-top", args->simulate_top, "plans re-evaluated by the simulator")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sub->add_flag("--explain", args->explain, "rejections per rule and reason; why the winner wins");
  sub->add_flag("--sensitivity", args->sensitivity, "perturb compute, NVLink, network by +-20%");
  add_search_flags(*sub, args->search);
  sub->add_option("--compare", args->compare, "plan file (e.g. from predict --out) to compare with");
  sub->add_option("--threads", args->threads, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_option("--interval-level", args->interval_level,
                  "the prediction intervals' level, in (0, 1): the share of jobs like this one whose "
                  "measured time falls inside (docs/predict.md)")
      ->capture_default_str();
  sub->add_option("--out", args->out, "write the winner's plan file");
  sub->add_option("--shortlist", args->shortlist.k,
                  "the K plans most likely to be the fastest, each with a short benchmark launch in "
                  "--shortlist-dir (docs/predict.md)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  sub->add_option("--shortlist-dir", args->shortlist.dir, "a new directory for the shortlist's plans and launches")
      ->capture_default_str();
  sub->add_option("--measured", args->measured,
                  "the shortlist's runs read back: parallax run measurements.json files or Megatron-LM "
                  "logs (each read with the plan.json of its directory); ranks the measured plans by "
                  "their measured time and the rest by the refitted model; --out writes the first")
      ->expected(1, -1);
  sub->add_option("--shortlist-iters", args->shortlist.iters, "the benchmark launches' iterations")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{2}, int64_t{100000}));
  sub->add_option("--search", args->search_file,
                  "a YAML or JSON search file: the job (model, cluster, gpus, stack, ...) and what to "
                  "search (tp, pp, mbs, recompute, zero, sp as values or lists; constraints)");
  sub->add_option("--csv", args->csv,
                  "write every candidate with its fate (ranked, out of memory, or the rule that "
                  "rejected it) as CSV to this file; - prints it instead of the tables");
  sub->callback([args, sub] {
    args->given = typed_recipe_keys(*sub);
    plan_and_print(*args);
  });
}

}  // namespace parallax::cli
