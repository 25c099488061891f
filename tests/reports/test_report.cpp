// The report: every chart has data, and the plans table shows the planner's numbers.
#include <catch2/catch.hpp>

#include <regex>

#include "parallax/core/presets.hpp"
#include "parallax/planner/simulator_refiner.hpp"
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
  // Pipeline: one rect per forward and backward of every micro-batch on every rank.
  const PlanSpec& w = d.search.plans.front().plan;
  CHECK(count(svg_of(html, "chart-pipeline"), "<rect") >=
        static_cast<size_t>(2 * w.pp * w.num_micro_batches * w.vpp));
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
  const SearchResult direct = search_plans(in.planner, topo, simulator_refiner(in.planner, topo));
  REQUIRE(d.search.plans.size() == direct.plans.size());
  const std::string html = render_html(d);
  // Row i of the table carries the i-th plan's ranking time with 3 decimals, in order.
  size_t pos = html.find("id=\"plans-table\"");
  for (size_t i = 0; i < 5; ++i) {
    CHECK(d.search.plans[i].plan == direct.plans[i].plan);
    const std::string cell = "<td>" + svg::number(direct.plans[i].time_s, 3) + "</td>";
    const size_t at = html.find(cell, pos);
    CHECK(at != std::string::npos);
    pos = at;
  }
}
