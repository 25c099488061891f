// The report: every chart has data, and the plans table shows the planner's numbers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>

#include "parallax/core/presets.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/planner/simulator_refiner.hpp"
#include "capacity_rows.hpp"
#include "synthetic_pipeline.hpp"
#include "parallax/reports/charts.hpp"
#include "parallax/reports/pipeline_phases.hpp"
#include "parallax/reports/report.hpp"
#include "parallax/reports/svg.hpp"

using namespace parallax;

namespace {

ReportInputs small_inputs() {
  ReportInputs in;
  in.planner.model = load_model("gpt3-175b");
  in.planner.cluster = load_cluster("dgx-a100-superpod");
  in.planner.job.global_batch = 1536;
  in.planner.job.tokens = 300e9;
  in.planner.job.price_per_gpu_hour_usd = 2;
  in.planner.gpus = 512;
  in.planner.profile = load_profile(in.planner.cluster.profile);
  in.gpu_counts = {256, 512, 1024};
  in.version = "test";
  return in;
}

std::string svg_of(const std::string& html, const std::string& id) {
  const auto a = html.find("id=\"" + id + "\"");
  REQUIRE(a != std::string::npos);
  return html.substr(a, html.find("</svg>", a) - a);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("every chart of the HTML report has data") {
  const ReportData d = build_report(small_inputs());
  const std::string html = render_html(d);
  const size_t stages = static_cast<size_t>(d.search.plans.front().plan.pp);
  // Memory: 5 stacked parts per stage plus the reserve band and legend swatches.
  CHECK(count(svg_of(html, "chart-memory"), "<rect") >= 5 * stages + 1);
  CHECK(count(svg_of(html, "chart-time"), "<rect") >= 6);
  // Pipeline: one rect per forward and backward of every micro-batch on every rank, unless the
  // pipeline is aggregated (then a bar per phase of each shown rank; see the tests below).
  const PlanSpec& w = d.search.plans.front().plan;
  const std::string pipe = svg_of(html, "chart-pipeline");
  if (w.pp <= kPipelineMaxRanks && w.num_micro_batches * w.vpp <= kPipelineMaxSteps) {
    CHECK(count(pipe, "<rect") >= static_cast<size_t>(2 * w.pp * w.num_micro_batches * w.vpp));
  } else {
    CHECK(count(pipe, "<rect") >= 3 * pipeline_rows(w.pp).size());
  }
  CHECK(pipe.find("class=\"legend\"") != std::string::npos);
  // Scaling: one point per GPU count with a plan, for each of the two series.
  CHECK(count(svg_of(html, "chart-scaling"), "<circle") == 2 * 3);
  for (const char* section : {"question", "plans", "memory", "time", "pipeline", "scaling",
                              "sensitivity", "conventions", "provenance"}) {
    CHECK(html.find(std::string("<section id=\"") + section + "\"") != std::string::npos);
  }
  // Self-contained: nothing loaded from the network, no scripts.
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
}

TEST_CASE("the report's plans table shows the planner's ranking and times") {
  const ReportInputs in = small_inputs();
  const ReportData d = build_report(in);
  const Topology topo(in.planner.cluster);
  const SearchResult direct = search_plans(in.planner, topo, simulator_refiner(in.planner));
  REQUIRE(d.search.plans.size() == direct.plans.size());
  const std::string html = render_html(d);
  // Row i of the table carries the i-th plan's ranking time with 3 decimals, in order, and its
  // interval in brackets.
  size_t pos = html.find("id=\"plans-table\"");
  for (size_t i = 0; i < 5; ++i) {
    CHECK(d.search.plans[i].plan == direct.plans[i].plan);
    const double t = direct.plans[i].time_s;
    const PredictionInterval iv = plan_interval(d, direct.plans[i].plan);
    CHECK(iv.low_ratio < 1);
    CHECK(iv.high_ratio > 1);
    const std::string cell = "<td>" + svg::number(t, 3) + " (" + svg::number(t * iv.low_ratio, 3) + "–" +
                             svg::number(t * iv.high_ratio, 3) + ")</td>";
    const size_t at = html.find(cell, pos);
    CHECK(at != std::string::npos);
    pos = at;
  }
}

namespace {

// Every `<text ... class="CLS"...>body</text>` of an SVG: (y, body).
std::vector<std::pair<double, std::string>> texts_of_class(const std::string& svg, const std::string& cls) {
  std::vector<std::pair<double, std::string>> out;
  const std::regex re("<text x=\"[-0-9.]+\" y=\"([-0-9.]+)\"[^>]*class=\"" + cls + "\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    out.emplace_back(std::stod((*it)[1]), (*it)[2]);
  }
  return out;
}

std::string section_of(const std::string& html, const std::string& id) {
  const auto a = html.find("<section id=\"" + id + "\"");
  REQUIRE(a != std::string::npos);
  return html.substr(a, html.find("</section>", a) - a);
}

}  // namespace

TEST_CASE("without tokens the report states 20 tokens per parameter where days and cost are shown") {
  ReportInputs in = small_inputs();
  in.planner.job.tokens = 0;
  in.gpu_counts = {512};
  const ReportData d = build_report(in);
  CHECK(d.tokens_assumed);
  // Hoffmann et al. 2022's rule of thumb: 20 tokens per parameter of the model.
  CHECK(d.in.planner.job.tokens == Approx(20 * model_params(in.planner.model)));
  const std::string html = render_html(d);
  for (const char* sec : {"question", "scaling", "conventions"}) {
    const std::string s = section_of(html, sec);
    CHECK(s.find("20 tokens per parameter") != std::string::npos);
    CHECK(s.find("Chinchilla rule of thumb (Hoffmann et al. 2022; no --tokens given)") != std::string::npos);
  }
  CHECK(svg_of(html, "chart-scaling").find("assuming 20 tokens/parameter") != std::string::npos);
  // Days follow from those tokens at the ranking time: tokens / (B·s / t) / 86400.
  const CapacityRow& r = d.scaling.at(0);
  REQUIRE(r.best);
  const double tokens_per_s = 1536.0 * static_cast<double>(in.planner.model.seq_len) / r.best->time_s;
  CHECK(r.days == Approx(20 * model_params(in.planner.model) / tokens_per_s / 86400));
  const std::string md = render_markdown(d);
  CHECK(md.find("20 tokens per parameter") != std::string::npos);
  const nlohmann::json j = render_json(d);
  CHECK(j["assumptions"]["tokens_assumed"] == true);
  CHECK(j["assumptions"]["tokens_per_parameter"].get<double>() == Approx(20));
}

TEST_CASE("without a price the cost is a dash in HTML and Markdown and null in JSON") {
  ReportInputs in = small_inputs();
  in.planner.job.price_per_gpu_hour_usd = 0;
  in.gpu_counts = {512};
  const ReportData d = build_report(in);
  const std::string html = render_html(d);
  CHECK(html.find("<td class=\"cost\">—</td>") != std::string::npos);
  CHECK(html.find("no --price given") != std::string::npos);
  CHECK(html.find("<td class=\"cost\">0</td>") == std::string::npos);
  const std::string md = render_markdown(d);
  CHECK(md.find(" | — | ") != std::string::npos);
  CHECK(md.find("no --price given") != std::string::npos);
  const nlohmann::json j = render_json(d);
  CHECK(j["scaling"][0]["cost_usd"].is_null());
  CHECK(j["assumptions"]["price_per_gpu_hour_usd"].is_null());
  CHECK(svg_of(html, "chart-scaling").find("cost unknown (no --price given)") != std::string::npos);
}

TEST_CASE("with a price the cost is GPU-hours times the price, and the price is printed beside it") {
  ReportInputs in = small_inputs();  // USD 2 per GPU-hour
  in.gpu_counts = {512};
  const ReportData d = build_report(in);
  const CapacityRow& r = d.scaling.at(0);
  REQUIRE(r.best);
  const double gpu_hours = r.days * 24 * 512;
  const std::string html = render_html(d);
  CHECK(html.find("<td class=\"cost\">" + svg::number(gpu_hours * 2, 0) + "</td>") != std::string::npos);
  CHECK(section_of(html, "scaling").find("USD 2.00 per GPU-hour (--price)") != std::string::npos);
  CHECK(render_json(d)["scaling"][0]["cost_usd"].get<double>() == Approx(gpu_hours * 2));
}

TEST_CASE("scaling efficiency is tokens per second per GPU relative to the smallest count, and is defined") {
  const ReportInputs in = small_inputs();  // 256, 512, 1024 GPUs
  const ReportData d = build_report(in);
  const Topology topo(in.planner.cluster);
  std::vector<double> time_s;
  for (int64_t n : in.gpu_counts) {
    PlannerInputs p = in.planner;
    p.gpus = n;
    p.top_k = std::min<int64_t>(p.top_k, 8);
    const SearchResult r = search_plans(p, topo, simulator_refiner(p));
    REQUIRE_FALSE(r.plans.empty());
    time_s.push_back(r.plans.front().time_s);
  }
  // (B·s / t_N / N) / (B·s / t_ref / N_ref) = (t_ref · N_ref) / (t_N · N): B·s cancels.
  for (size_t i = 0; i < 3; ++i) {
    const double expected = (time_s[0] * 256) / (time_s[i] * static_cast<double>(in.gpu_counts[i]));
    CHECK(d.scaling[i].scaling_efficiency == Approx(expected));
  }
  const std::string html = render_html(d);
  const std::string table = html.substr(html.find("id=\"scaling-table\""));
  CHECK(table.find("<tfoot class=\"definitions\">") < table.find("</table>"));
  CHECK(table.find("scaling efficiency = (tokens/s_N / N) / (tokens/s_ref / N_ref), N_ref = 256 GPUs") <
        table.find("</table>"));
  const bool above = std::any_of(d.scaling.begin(), d.scaling.end(),
                                 [](const CapacityRow& r) { return r.scaling_efficiency > 1; });
  CHECK((html.find("id=\"scaling-above-100\"") != std::string::npos) == above);
  // Every column of every table is defined: as many definition rows as header cells.
  for (const char* id : {"plans-table", "scaling-table", "sensitivity-table"}) {
    const auto a = html.find(std::string("id=\"") + id + "\"");
    const std::string t = html.substr(a, html.find("</table>", a) - a);
    const std::string foot = t.substr(t.find("<tfoot"));
    CHECK(count(t, "<th>") == count(foot, "<tr>"));
  }
}

namespace {

using test::row_with_days;

double days_circle_y(const std::string& svg, int64_t gpus) {
  const std::regex re("<circle cx=\"[0-9.]+\" cy=\"([0-9.]+)\"[^>]*><title>" + std::to_string(gpus) + " GPUs: [0-9.]+ days");
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, re));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("the days axis is logarithmic when the days span more than a decade") {
  const std::string s = scaling_chart({row_with_days(64, 10), row_with_days(512, 100), row_with_days(4096, 1000)},
                                      0, "");
  CHECK(s.find("id=\"axis-days\" data-scale=\"log\"") != std::string::npos);
  // On a log axis 100 sits halfway between 10 and 1000 (pixel coordinates have one decimal).
  const double y10 = days_circle_y(s, 64), y100 = days_circle_y(s, 512), y1000 = days_circle_y(s, 4096);
  CHECK(y100 == Approx((y10 + y1000) / 2).margin(0.1));
  // Ticks at the powers of ten, labelled, and at 2 and 5 times them, labelled smaller.
  std::vector<std::string> major, minor;
  for (const auto& [y, t] : texts_of_class(s, "tick major")) major.push_back(t);
  for (const auto& [y, t] : texts_of_class(s, "tick minor")) minor.push_back(t);
  CHECK(major == std::vector<std::string>{"10", "100", "1000"});
  CHECK(minor == std::vector<std::string>{"20", "50", "200", "500"});

  const std::string lin = scaling_chart({row_with_days(64, 40), row_with_days(512, 20), row_with_days(4096, 10)},
                                        0, "");
  CHECK(lin.find("id=\"axis-days\" data-scale=\"linear\"") != std::string::npos);
  // Linear from 0: 20 days sits halfway between 0 (the axis bottom) and 40.
  const double y40 = days_circle_y(lin, 64), y20 = days_circle_y(lin, 512);
  const double y0 = 30 + 320 - 30 - 60;  // kTop + plot height: the axis' zero
  CHECK(y20 == Approx((y0 + y40) / 2).margin(0.1));
}

TEST_CASE("the scaling chart shades each curve's prediction interval") {
  const std::vector<CapacityRow> rows = {row_with_days(64, 10), row_with_days(512, 100), row_with_days(4096, 1000)};
  CHECK(scaling_chart(rows, 0, "").find("<polygon") == std::string::npos);  // none without intervals
  PredictionInterval iv;
  iv.level = 0.8;
  iv.low_ratio = 0.5;  // measured / predicted time
  iv.high_ratio = 2.0;
  const std::string s = scaling_chart(rows, 0, "", {iv, iv, iv});
  const std::regex band("<polygon class=\"interval\" points=\"([^\"]+)\"");
  std::vector<std::string> bands;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), band); it != std::sregex_iterator(); ++it)
    bands.push_back((*it)[1]);
  REQUIRE(bands.size() == 2);  // TFLOP/s, then days
  // The days band's first point: 64 GPUs at 10 x 2 = 20 days, log10(2) of a decade above 10 days.
  const double y10 = days_circle_y(s, 64), y100 = days_circle_y(s, 512);
  const std::string first = bands[1].substr(0, bands[1].find(' '));
  CHECK(std::stod(first.substr(first.find(',') + 1)) == Approx(y10 - (y10 - y100) * std::log10(2.0)).margin(0.15));
  CHECK(s.find("shaded: its 80% interval") != std::string::npos);
  // An infinite end leaves the bands out.
  iv.high_ratio = std::numeric_limits<double>::infinity();
  CHECK(scaling_chart(rows, 0, "", {iv, iv, iv}).find("<polygon") == std::string::npos);
}

TEST_CASE("a 35-rank, 240-micro-batch pipeline is shown as ranks and phases that stay legible") {
  CHECK(pipeline_rows(35) == std::vector<int64_t>{0, 1, 2, -1, 16, 17, -1, 32, 33, 34});
  const std::string s = pipeline_chart(test::synthetic_pipeline(35, 240, true), 35);
  const auto labels = texts_of_class(s, "rank-label");
  std::vector<std::string> names;
  for (const auto& [y, t] : labels) names.push_back(t);
  CHECK(names == std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 16", "rank 17", "rank 32",
                                          "rank 33", "rank 34"});
  for (size_t i = 1; i < labels.size(); ++i) CHECK(labels[i].first - labels[i - 1].first >= 9 + 2);  // 9 px font
  std::vector<std::string> gaps;
  for (const auto& [y, t] : texts_of_class(s, "gap")) gaps.push_back(t);
  CHECK(gaps == std::vector<std::string>{"ranks 3-15 not shown", "ranks 18-31 not shown"});
  for (const char* item : {">forward<", ">backward<", ">exposed communication<", ">bubble (idle)<", ">optimizer<"}) {
    CHECK(s.find(item) != std::string::npos);
  }
  // 16,800 steps become a few bars per rank.
  CHECK(count(s, "<rect") < 8 * 5 * 4 + 8 + 5 + 1);
  // Rank 0's phase bars account for all its forward time: 240 forwards of 1 s.
  const std::regex fwd("rank 0 [A-Za-z0-9 -]+ \\([0-9.]+-[0-9.]+ s\\): forward ([0-9.]+) s");
  double fwd_s = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), fwd); it != std::sregex_iterator(); ++it) {
    fwd_s += std::stod((*it)[1]);
  }
  CHECK(fwd_s == Approx(240).margin(0.01));
  // Rank 34 waits 34 s before its first forward: all bubble.
  CHECK(s.find("rank 34 fill (0.000-34.000 s): bubble 34.000 s, 100.0%") != std::string::npos);
}

TEST_CASE("a small pipeline shows every step of every rank, with a legend") {
  const std::string s = pipeline_chart(test::synthetic_pipeline(4, 8, true), 4);
  CHECK(count(s, "<rect") >= 2 * 4 * 8);
  CHECK(texts_of_class(s, "rank-label").size() == 4);
  CHECK(s.find("class=\"legend\"") != std::string::npos);
}

TEST_CASE("a rank's phases divide its iteration into forward, backward, communication and bubble") {
  // Rank 0 of the hand-made pipeline (m = 240, pp = 35): forwards [3i, 3i+1), backwards
  // [3i+1, 3i+3), optimizer at 3·240 + 35 + 5 = 760 s.
  const std::vector<PipelinePhase> ph = pipeline_phases(test::synthetic_pipeline(35, 240, true), 0);
  REQUIRE(ph.size() == 4);  // no fill: rank 0 starts at once
  CHECK(std::string(ph[0].name) == "warm-up");  // forward 0 only
  CHECK(ph[0].start_s == 0);
  CHECK(ph[0].end_s == 1);
  CHECK(ph[0].forward_s == 1);
  CHECK(std::string(ph[1].name) == "steady 1F1B");  // to the end of forward 239 at 718 s
  CHECK(ph[1].end_s == 718);
  CHECK(ph[1].forward_s == 239);       // forwards 1..239
  CHECK(ph[1].backward_s == 239 * 2);  // backwards 0..238
  CHECK(ph[1].bubble_s == Approx(0).margin(1e-9));
  CHECK(std::string(ph[2].name) == "cool-down");  // backward 239: [718, 720)
  CHECK(ph[2].backward_s == 2);
  CHECK(std::string(ph[3].name) == "gradient sync");  // idle until the optimizer; no transfers
  CHECK(ph[3].bubble_s == 760 - 720);
  CHECK(ph[3].comm_s == 0);
  // Rank 34 waits 34 s for its first forward: a fill phase, all bubble.
  const std::vector<PipelinePhase> last = pipeline_phases(test::synthetic_pipeline(35, 240, true), 34);
  CHECK(std::string(last.front().name) == "fill");
  CHECK(last.front().bubble_s == 34);
}

TEST_CASE("an idle compute stream with a transfer in flight counts as communication, not bubble") {
  SimResult sim = test::synthetic_pipeline(2, 2, true);  // rank 1: F [1,2) B [2,4) F [4,5) B [5,7), optimizer at 13
  SimOp dp;
  dp.rank = 1;
  dp.stream = SimStream::dp;
  dp.kind = SimOpKind::dp_bucket;
  dp.start_s = 6;  // overlaps backward 1 by 1 s, then exposed for 3 s of the 6 s gradient sync
  dp.duration_s = 4;
  sim.ops.push_back(dp);
  const std::vector<PipelinePhase> ph = pipeline_phases(sim, 1);
  REQUIRE(std::string(ph.back().name) == "gradient sync");
  CHECK(ph.back().start_s == 7);
  CHECK(ph.back().end_s == 13);
  CHECK(ph.back().comm_s == 3);
  CHECK(ph.back().bubble_s == 3);
}

TEST_CASE("the question names a rotary model's RoPE base and Llama 3.1 scaling") {
  ReportInputs in = small_inputs();
  in.gpu_counts = {512};
  ReportData d = build_report(in);
  CHECK(section_of(render_html(d), "question").find(", learned positions. Cluster") !=
        std::string::npos);
  ModelSpec& m = d.in.planner.model;  // only the inputs paragraph reads it here
  m = load_model("llama2-70b");
  CHECK(section_of(render_html(d), "question").find(", rope positions (base 10000). Cluster") !=
        std::string::npos);
  m.rope_base = 500000;  // Llama 3.1's
  m.rope_scaling = {8, 1, 4, 8192};
  CHECK(section_of(render_html(d), "question")
            .find(", rope positions (base 500000, Llama 3.1 scaling: factor 8, low/high frequency "
                  "factors 1/4, original context 8192). Cluster") != std::string::npos);
}
