#include "parallax/reports/report.hpp"

#include <algorithm>
#include <cstdio>

#include "parallax/core/error.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "parallax/reports/charts.hpp"
#include "parallax/reports/svg.hpp"
#include "parallax/simulator/sim_inputs.hpp"

namespace parallax {
namespace {

using svg::escape;
using svg::number;

std::string plan_cell(const PlanSpec& p) {
  std::string s = "tp " + std::to_string(p.tp) + " · pp " + std::to_string(p.pp);
  if (p.vpp > 1) s += " (vpp " + std::to_string(p.vpp) + ")";
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    s += " (first " + std::to_string(p.first_stage_layers) + ", last " +
         std::to_string(p.last_stage_layers) + " layers)";
  }
  s += " · dp " + std::to_string(p.dp) + " · mbs " + std::to_string(p.micro_batch) + " · " +
       to_string(p.recompute) + (p.sequence_parallel ? " · sp" : "") +
       (p.zero > 0 ? " · ZeRO-" + std::to_string(p.zero) : "");
  return s;
}

struct Row {
  std::string plan;
  double time_s, model_tf, megatron_tf, mfu, peak_gb, headroom_gb, bubble;
};

std::vector<Row> top_rows(const ReportData& d) {
  std::vector<Row> rows;
  for (size_t i = 0; i < d.search.plans.size() && static_cast<int64_t>(i) < d.in.top; ++i) {
    const RankedPlan& r = d.search.plans[i];
    const Prediction& p = r.prediction;
    const double scale = p.iteration_time_s / r.time_s;  // throughput at the ranking time
    rows.push_back({plan_cell(r.plan), r.time_s, p.model_tflops_per_gpu * scale,
                    p.megatron_tflops_per_gpu * scale, p.mfu * scale, p.peak_bytes / 1e9,
                    r.headroom_bytes() / 1e9, p.time.bubble_s / p.iteration_time_s});
  }
  return rows;
}

const char* kCss =
    "body{font-family:sans-serif;max-width:1060px;margin:24px auto;color:#222;line-height:1.4}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:right}td:first-child,th:first-child{text-align:left}tr.win{background:#eef6ff}"
    ".note{color:#555;font-size:12px}svg.chart{display:block;margin:8px 0;border:1px solid #eee}";

}  // namespace

std::vector<int64_t> default_scaling_counts(const PlannerInputs& in) {
  std::vector<int64_t> out;
  const ClusterSpec& c = in.cluster;
  for (int64_t n = c.gpus_per_node * 8; n <= c.total_gpus(); n *= 2) out.push_back(n);
  if (std::find(out.begin(), out.end(), in.gpus) == out.end()) {
    out.push_back(in.gpus);
    std::sort(out.begin(), out.end());
  }
  return out;
}

ReportData build_report(const ReportInputs& in,
                        const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  ReportData d;
  d.in = in;
  d.in.planner.job.tokens = tokens_or_default(in.planner.job, in.planner.model);
  say("planning");
  const Topology topo(in.planner.cluster);
  d.search = search_plans(in.planner, topo, simulator_refiner(in.planner, topo));
  if (d.search.plans.empty()) {
    throw InputError("command line", "--gpus",
                     "no plan fits for " + std::to_string(in.planner.gpus) +
                         " GPUs; see `parallax plan --explain`");
  }
  say("simulating the winner");
  const RankedPlan& win = d.search.plans.front();
  d.sim = simulate(make_sim_inputs(in.planner.model, topo, in.planner.job, win.plan,
                                   in.planner.profile));
  say("scaling curve");
  const std::vector<int64_t> counts = in.gpu_counts.empty() ? default_scaling_counts(in.planner) : in.gpu_counts;
  d.scaling = capacity_sweep(in.planner, counts, d.in.planner.job.tokens,
                             in.planner.job.price_per_gpu_hour_usd);
  say("sensitivity");
  d.sensitivity = sensitivity_analysis(in.planner, d.search);
  return d;
}

std::string render_html(const ReportData& d) {
  const PlannerInputs& in = d.in.planner;
  const ModelSpec& m = in.model;
  const RankedPlan& win = d.search.plans.front();
  const Prediction& pr = win.prediction;
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Parallax report: " +
                  escape(m.name) + " on " + escape(in.cluster.name) + "</title><style>" + kCss +
                  "</style></head><body>";
  h += "<h1>How to train " + escape(m.name) + " on " + std::to_string(in.gpus) + " × " +
       escape(in.cluster.gpu.name) + "</h1>";
  h += "<section id=\"question\"><h2>The question and the inputs</h2><p>Model <b>" + escape(m.name) +
       "</b>: " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " +
       std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " KV), FFN " +
       std::to_string(m.ffn_hidden) + ", sequence " + std::to_string(m.seq_len) + ", vocabulary " +
       std::to_string(m.vocab) + ", " + to_string(m.activation) + ", " + to_string(m.position) +
       " positions. Cluster <b>" + escape(in.cluster.name) + "</b>: " +
       std::to_string(in.cluster.nodes) + " nodes × " + std::to_string(in.cluster.gpus_per_node) +
       " " + escape(in.cluster.gpu.name) + ", " + std::to_string(in.gpus) +
       " GPUs used. Job: global batch " + std::to_string(in.job.global_batch) + " sequences, " +
       to_string(in.job.dtype) + ", " + number(in.job.tokens / 1e9, 1) + "B tokens, $" +
       number(in.job.price_per_gpu_hour_usd, 2) + " per GPU-hour, stack " + escape(in.job.framework) +
       ".</p></section>";

  h += "<section id=\"plans\"><h2>Top plans</h2><p class=\"note\">" +
       std::to_string(d.search.plans.size()) + " plans fit of " + std::to_string(d.search.evaluated) +
       " admitted (" + std::to_string(d.search.considered) + " considered); the top " +
       std::to_string(in.top_k) + " were re-timed by the event simulator.</p>"
       "<table id=\"plans-table\"><tr><th>#</th><th>plan</th><th>iteration s</th><th>model TFLOP/s/GPU</th>"
       "<th>Megatron TFLOP/s/GPU</th><th>MFU</th><th>peak GB/GPU</th><th>headroom GB</th><th>bubble</th></tr>";
  int i = 0;
  for (const Row& r : top_rows(d)) {
    const bool first = i == 0;
    ++i;
    h += std::string("<tr") + (first ? " class=\"win\"" : "") + "><td>" + std::to_string(i) +
         "</td><td>" + escape(r.plan) + "</td><td>" + number(r.time_s, 3) + "</td><td>" +
         number(r.model_tf, 1) + "</td><td>" + number(r.megatron_tf, 1) + "</td><td>" +
         number(r.mfu * 100, 1) + "%</td><td>" + number(r.peak_gb, 1) + "</td><td>" +
         number(r.headroom_gb, 1) + "</td><td>" + number(r.bubble * 100, 1) + "%</td></tr>";
  }
  h += "</table></section>";

  h += "<section id=\"memory\"><h2>Where memory goes: the winner, per pipeline stage</h2>" +
       memory_chart(pr) + "<p class=\"note\">" + std::to_string(pr.bytes_per_param) +
       " bytes per parameter (weights + gradients + optimizer), ZeRO-" +
       std::to_string(win.plan.zero) + "; activations by Korthikanti et al. 2022 times the "
       "micro-batches in flight.</p></section>";
  h += "<section id=\"time\"><h2>Where time goes: one iteration of the winner</h2>" + time_chart(pr) +
       "</section>";
  h += "<section id=\"pipeline\"><h2>How the pipeline fills: one simulated iteration</h2>" +
       pipeline_chart(d.sim, win.plan.pp) + "<p class=\"note\">Schedule " +
       to_string(win.plan.schedule) + ", " + std::to_string(win.plan.num_micro_batches) +
       " micro-batches per pipeline; simulated iteration " + number(d.sim.iteration_time_s, 3) +
       " s.</p></section>";

  h += "<section id=\"scaling\"><h2>Where scaling stops paying</h2>" + scaling_chart(d.scaling) +
       "<table id=\"scaling-table\"><tr><th>GPUs</th><th>best plan</th><th>model TFLOP/s/GPU</th><th>MFU</th>"
       "<th>days</th><th>GPU-hours</th><th>cost USD</th><th>scaling</th></tr>";
  for (const CapacityRow& r : d.scaling) {
    if (!r.best) {
      h += "<tr><td>" + std::to_string(r.gpus) + "</td><td colspan=\"7\">" + escape(r.no_plan_reason) + "</td></tr>";
      continue;
    }
    h += "<tr><td>" + std::to_string(r.gpus) + "</td><td>" + escape(plan_cell(r.best->plan)) +
         "</td><td>" + number(r.best->prediction.model_tflops_per_gpu, 1) + "</td><td>" +
         number(r.best->prediction.mfu * 100, 1) + "%</td><td>" + number(r.days, 1) + "</td><td>" +
         number(r.gpu_hours, 0) + "</td><td>" + number(r.cost_usd, 0) + "</td><td>" +
         number(r.scaling_efficiency * 100, 1) + "%" + (r.knee ? " (knee)" : "") + "</td></tr>";
  }
  h += "</table></section>";

  h += "<section id=\"sensitivity\"><h2>Robustness: ±20% on compute, NVLink and network</h2>"
       "<table id=\"sensitivity-table\"><tr><th>perturbation</th><th>winner's rank</th><th>best plan under it</th>"
       "<th>iteration s</th></tr>";
  for (const SensitivityCase& c : d.sensitivity.cases) {
    h += "<tr><td>" + escape(c.perturbation.name) + "</td><td>" + std::to_string(c.winner_rank + 1) +
         "</td><td>" + escape(plan_cell(c.best.plan)) + "</td><td>" + number(c.best.time_s, 3) + "</td></tr>";
  }
  h += std::string("</table><p>The winner stays in the top 3 in every case: <b>") +
       (d.sensitivity.winner_stays_top3 ? "yes" : "no") + "</b>.</p></section>";

  h += "<section id=\"conventions\"><h2>Conventions</h2><ul>"
       "<li>Model FLOPs count every GEMM of forward and backward once: 72·B·s·L·h²·(1 + s/6h + V/12Lh) for a GPT with a 4h FFN; MFU divides them by the dtype's dense peak.</li>"
       "<li>Megatron TFLOP/s use 96·B·s·L·h²·(1 + s/6h + V/16Lh) (Narayanan et al. 2021), which counts a full recompute pass whether or not it runs.</li>"
       "<li>Memory: GB = 10<sup>9</sup> bytes; bandwidths and busbw in nccl-tests' conventions.</li></ul></section>";
  h += "<section id=\"provenance\"><h2>Version and provenance</h2><p>Parallax " + escape(d.in.version) +
       "; efficiency profile <b>" + escape(in.profile.name) + "</b>: " + escape(in.profile.source) +
       "</p><p>Cluster: " + escape(in.cluster.source) + "</p></section>";
  return h + "</body></html>\n";
}

std::string render_markdown(const ReportData& d) {
  const PlannerInputs& in = d.in.planner;
  std::string s = "# How to train " + in.model.name + " on " + std::to_string(in.gpus) + " × " +
                  in.cluster.gpu.name + "\n\n## Top plans\n\n| # | plan | iteration s | model TFLOP/s/GPU | "
                  "Megatron TFLOP/s/GPU | MFU | peak GB | headroom GB | bubble |\n|---|---|---|---|---|---|---|---|---|\n";
  int i = 0;
  for (const Row& r : top_rows(d)) {
    s += "| " + std::to_string(++i) + " | " + r.plan + " | " + number(r.time_s, 3) + " | " +
         number(r.model_tf, 1) + " | " + number(r.megatron_tf, 1) + " | " + number(r.mfu * 100, 1) +
         "% | " + number(r.peak_gb, 1) + " | " + number(r.headroom_gb, 1) + " | " +
         number(r.bubble * 100, 1) + "% |\n";
  }
  s += "\n## Scaling\n\n| GPUs | days | GPU-hours | cost USD | scaling |\n|---|---|---|---|---|\n";
  for (const CapacityRow& r : d.scaling) {
    if (!r.best) continue;
    s += "| " + std::to_string(r.gpus) + " | " + number(r.days, 1) + " | " + number(r.gpu_hours, 0) +
         " | " + number(r.cost_usd, 0) + " | " + number(r.scaling_efficiency * 100, 1) + "%" +
         (r.knee ? " (knee)" : "") + " |\n";
  }
  s += std::string("\nWinner stays in the top 3 under ±20% perturbations: ") +
       (d.sensitivity.winner_stays_top3 ? "yes" : "no") + "\n\nProfile: " + in.profile.name + "\n";
  return s;
}

nlohmann::json render_json(const ReportData& d) {
  nlohmann::json plans = nlohmann::json::array();
  for (size_t i = 0; i < d.search.plans.size() && static_cast<int64_t>(i) < d.in.top; ++i) {
    nlohmann::json j = to_json(d.search.plans[i].prediction);
    j["plan"] = to_json(d.search.plans[i].plan);
    j["ranking_time_s"] = d.search.plans[i].time_s;
    plans.push_back(j);
  }
  nlohmann::json scaling = nlohmann::json::array();
  for (const CapacityRow& r : d.scaling) {
    nlohmann::json j = {{"gpus", r.gpus}, {"knee", r.knee}};
    if (r.best) {
      j["days"] = r.days;
      j["gpu_hours"] = r.gpu_hours;
      j["cost_usd"] = r.cost_usd;
      j["scaling_efficiency"] = r.scaling_efficiency;
      j["plan"] = to_json(r.best->plan);
    }
    scaling.push_back(j);
  }
  return {{"plans", plans},
          {"scaling", scaling},
          {"simulated_iteration_time_s", d.sim.iteration_time_s},
          {"winner_stays_top3", d.sensitivity.winner_stays_top3},
          {"profile", d.in.planner.profile.name},
          {"version", d.in.version}};
}

}  // namespace parallax
