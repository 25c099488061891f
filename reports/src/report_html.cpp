// The report as one self-contained HTML file: inline SVG and CSS, no scripts, nothing fetched.
#include <cstdio>

#include "parallax/reports/charts.hpp"
#include "parallax/reports/report.hpp"
#include "parallax/reports/svg.hpp"
#include "report_notes.hpp"
#include "report_rows.hpp"

namespace parallax {
namespace {

using report_rows::plan_cell;
using svg::escape;
using report_rows::with_range;
using svg::number;

const char* kCss =
    "body{font-family:sans-serif;max-width:1060px;margin:24px auto;color:#222;line-height:1.4}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:right}td:first-child,th:first-child{text-align:left}tr.win{background:#eef6ff}"
    "tfoot td{text-align:left;color:#555;font-size:11px;border:none;padding:1px 6px}"
    ".note{color:#555;font-size:12px}.assumption{font-size:13px;background:#fff8e6;padding:4px 8px}"
    "svg.chart{display:block;margin:8px 0;border:1px solid #eee}";

// Each column's definition, one footnote row each, under the table.
std::string definitions(const std::vector<report_notes::Column>& cols) {
  std::string s = "<tfoot class=\"definitions\">";
  for (const report_notes::Column& c : cols) {
    s += "<tr><td colspan=\"" + std::to_string(cols.size()) + "\"><b>" + escape(c.name) + "</b>: " +
         escape(c.definition) + "</td></tr>";
  }
  return s + "</tfoot>";
}

std::string header(const std::vector<report_notes::Column>& cols) {
  std::string s = "<tr>";
  for (const report_notes::Column& c : cols) s += "<th>" + escape(c.name) + "</th>";
  return s + "</tr>";
}

// "learned positions", or with RoPE its base and Llama 3.1 scaling: "rope positions (base 500000,
// Llama 3.1 scaling: factor 8, low/high frequency factors 1/4, original context 8192)".
std::string positions(const ModelSpec& m) {
  std::string s = std::string(to_string(m.position)) + " positions";
  if (m.position != Position::rope) return s;
  char buf[192];
  std::snprintf(buf, sizeof buf, " (base %g", m.rope_base);
  s += buf;
  if (m.has_rope_scaling()) {
    const RopeScaling& x = m.rope_scaling;
    std::snprintf(
        buf, sizeof buf,
        ", Llama 3.1 scaling: factor %g, low/high frequency factors %g/%g, original context %lld",
        x.factor, x.low_freq_factor, x.high_freq_factor,
        static_cast<long long>(x.original_max_position));
    s += buf;
  }
  return s + ")";
}

std::string question(const ReportData& d) {
  const PlannerInputs& in = d.in.planner;
  const ModelSpec& m = in.model;
  return "<section id=\"question\"><h2>The question and the inputs</h2><p>Model <b>" + escape(m.name) +
         "</b>: " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " +
         std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " KV), FFN " +
         std::to_string(m.ffn_hidden) + ", sequence " + std::to_string(m.seq_len) + ", vocabulary " +
         std::to_string(m.vocab) + ", " + to_string(m.activation) + ", " + positions(m) +
         ". Cluster <b>" + escape(in.cluster.name) + "</b>: " +
         std::to_string(in.cluster.nodes) + " nodes × " + std::to_string(in.cluster.gpus_per_node) +
         " " + escape(in.cluster.gpu.name) + ", " + std::to_string(in.gpus) +
         " GPUs used. Job: global batch " + std::to_string(in.job.global_batch) + " sequences, " +
         to_string(in.job.dtype) + ", stack " + escape(in.job.framework) +
         ".</p><p class=\"assumption\" id=\"assumption-tokens\">Training length: " +
         escape(report_notes::tokens_assumption(d)) +
         ".</p><p class=\"assumption\" id=\"assumption-price\">Price: " +
         escape(report_notes::price_assumption(d)) + ".</p></section>";
}

// Each scaling row's interval (an empty one where the row has no plan).
std::vector<PredictionInterval> scaling_intervals(const ReportData& d) {
  std::vector<PredictionInterval> out;
  for (const CapacityRow& r : d.scaling) out.push_back(r.best ? plan_interval(d, r.best->plan) : PredictionInterval{});
  return out;
}

std::string scaling(const ReportData& d) {
  const auto cols = report_notes::scaling_columns(d);
  std::string h = "<section id=\"scaling\"><h2>Where scaling stops paying</h2>" +
                  scaling_chart(d.scaling, d.in.planner.job.price_per_gpu_hour_usd,
                                report_notes::tokens_short(d), scaling_intervals(d)) +
                  "<p class=\"assumption\">Days, GPU-hours and cost assume " +
                  escape(report_notes::tokens_assumption(d)) + ". Cost: " +
                  escape(report_notes::price_assumption(d)) + ".</p><table id=\"scaling-table\">" +
                  header(cols);
  for (const CapacityRow& r : d.scaling) {
    if (!r.best) {
      h += "<tr><td>" + std::to_string(r.gpus) + "</td><td colspan=\"7\">" + escape(r.no_plan_reason) + "</td></tr>";
      continue;
    }
    const double scale = r.best->throughput_scale();  // at the ranking time, as the days
    h += "<tr><td>" + std::to_string(r.gpus) + "</td><td>" + escape(plan_cell(r.best->plan)) +
         "</td><td>" + number(r.best->prediction.model_tflops_per_gpu * scale, 1) + "</td><td>" +
         number(r.best->prediction.mfu * scale * 100, 1) + "%</td><td>" +
         escape(with_range(r.days, plan_interval(d, r.best->plan), 1)) + "</td><td>" +
         escape(with_range(r.gpu_hours, plan_interval(d, r.best->plan), 0)) + "</td><td class=\"cost\">" + report_notes::cost_cell(d, r) + "</td><td>" +
         number(r.scaling_efficiency * 100, 1) + "%" + (r.knee ? " (knee)" : "") + "</td></tr>";
  }
  h += definitions(cols) + "</table>";
  const std::string above = report_notes::scaling_above_100(d);
  if (!above.empty()) h += "<p class=\"note\" id=\"scaling-above-100\">" + escape(above) + "</p>";
  return h + "</section>";
}

}  // namespace

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
  h += question(d);

  const auto plan_cols = report_notes::plans_columns();
  h += "<section id=\"plans\"><h2>Top plans</h2><p class=\"note\">" +
       std::to_string(d.search.plans.size()) + " plans fit of " + std::to_string(d.search.evaluated) +
       " admitted (" + std::to_string(d.search.considered) + " considered); the top " +
       std::to_string(in.top_k) + " were re-timed by the event simulator.</p>"
       "<table id=\"plans-table\">" + header(plan_cols);
  int i = 0;
  for (const report_rows::Row& r : report_rows::top_rows(d)) {
    const bool first = i == 0;
    ++i;
    h += std::string("<tr") + (first ? " class=\"win\"" : "") + "><td>" + r.rank +
         "</td><td>" + escape(r.plan) + "</td><td>" + escape(report_rows::with_range(r.time_s, r.interval, 3)) + "</td><td>" +
         number(r.model_tf, 1) + "</td><td>" + number(r.megatron_tf, 1) + "</td><td>" +
         number(r.mfu * 100, 1) + "%</td><td>" + number(r.peak_gb, 1) + "</td><td>" +
         number(r.headroom_gb, 1) + "</td><td>" + number(r.bubble * 100, 1) + "%</td></tr>";
  }
  h += definitions(plan_cols) + "</table><p class=\"note\" id=\"plans-interval\">" +
       escape(report_rows::plans_note(d)) + "</p></section>";

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
       " s. Phases: fill (idle before the first forward), warm-up (forwards before the first "
       "backward), steady 1F1B (one forward, one backward), cool-down (backwards after the last "
       "forward), gradient sync (until the optimizer step).</p></section>";

  h += scaling(d);

  const auto sens_cols = report_notes::sensitivity_columns();
  h += "<section id=\"sensitivity\"><h2>Robustness: ±20% on compute, NVLink and network</h2>"
       "<table id=\"sensitivity-table\">" + header(sens_cols);
  for (const SensitivityCase& c : d.sensitivity.cases) {
    h += "<tr><td>" + escape(c.perturbation.name) + "</td><td>" + std::to_string(c.winner_rank + 1) +
         "</td><td>" + escape(plan_cell(c.best.plan)) + "</td><td>" + number(c.best.time_s, 3) + "</td></tr>";
  }
  h += definitions(sens_cols) + "</table><p>The winner stays in the top 3 in every case: <b>" +
       (d.sensitivity.winner_stays_top3 ? "yes" : "no") + "</b>.</p></section>";

  h += "<section id=\"conventions\"><h2>Conventions</h2><ul>"
       "<li>Model FLOPs count every GEMM of forward and backward once: 72·B·s·L·h²·(1 + s/6h + V/12Lh) for a GPT with a 4h FFN; MFU divides them by the dtype's dense peak.</li>"
       "<li>Megatron TFLOP/s use 96·B·s·L·h²·(1 + s/6h + V/16Lh) (Narayanan et al. 2021), which counts a full recompute pass whether or not it runs.</li>"
       "<li>Memory: GB = 10<sup>9</sup> bytes; bandwidths and busbw in nccl-tests' conventions.</li>"
       "<li>Training tokens: " + escape(report_notes::tokens_assumption(d)) + ".</li>"
       "<li>Price: " + escape(report_notes::price_assumption(d)) + ".</li></ul></section>";
  h += "<section id=\"provenance\"><h2>Version and provenance</h2><p>Parallax " + escape(d.in.version) +
       "; efficiency profile <b>" + escape(in.profile.name) + "</b>: " + escape(in.profile.source) +
       "</p><p>Cluster: " + escape(in.cluster.source) + "</p></section>";
  return h + "</body></html>\n";
}

}  // namespace parallax
