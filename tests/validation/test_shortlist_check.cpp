// The shortlist's check on sweeps (validation/shortlist_check.hpp): on tables built by hand, the
// tie rule of each sweep comes from the other groups' sweeps only, and the shortlist holds the
// measured-fastest row or says it does not; on the committed residual table, issue 62's
// done-when: the shortlist of 3 holds the measured-fastest plan of every sweep.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "parallax/validation/shortlist_check.hpp"

namespace parallax::test {
namespace {

ResidualRow sweep_row(const std::string& sweep, int i, double predicted_s, double measured_s) {
  ResidualRow r;
  r.id = sweep + "-" + std::to_string(i);
  r.source = sweep;
  r.group = sweep;
  r.sweep = sweep;
  r.predicted_iteration_time_s = predicted_s;
  r.measured_iteration_time_s = measured_s;
  return r;
}

// Five sweeps of two rows whose ratio errors are 2%, 4%, ..., 10% (|r_A - r_B| = ln 1.02, ...).
ResidualTable pairs() {
  ResidualTable t;
  for (int s = 1; s <= 5; ++s) {
    const std::string name = "pair" + std::to_string(s);
    t.rows.push_back(sweep_row(name, 0, 1.0, 1.0));
    t.rows.push_back(sweep_row(name, 1, 1.0, 1.0 + 0.02 * s));
  }
  return t;
}

}  // namespace

TEST_CASE("shortlist check: each sweep is judged by the other groups' sweeps", "[validation][shortlist]") {
  ResidualTable t = pairs();
  // A sweep of four plans whose measured-fastest the model puts last, 30% behind: outside any
  // shortlist of 3; and one whose measured-fastest it puts second, 1% behind: inside.
  t.rows.push_back(sweep_row("far", 0, 1.00, 1.2));
  t.rows.push_back(sweep_row("far", 1, 1.01, 1.3));
  t.rows.push_back(sweep_row("far", 2, 1.02, 1.4));
  t.rows.push_back(sweep_row("far", 3, 1.30, 1.0));
  t.rows.push_back(sweep_row("near", 0, 1.00, 1.1));
  t.rows.push_back(sweep_row("near", 1, 1.01, 1.0));
  const std::vector<SweepShortlist> out = shortlist_check(t, 3, 0.8);
  REQUIRE(out.size() == 7);
  const SweepShortlist& far = out[5];
  CHECK(far.sweep == "far");
  CHECK(far.rule_sweeps == 6);  // the five pairs and "near", not itself
  CHECK(far.measured_fastest == "far-3");
  CHECK(far.measured_fastest_rank == 4);
  CHECK(far.shortlist == std::vector<std::string>{"far-0", "far-1", "far-2"});
  CHECK_FALSE(far.holds());
  const SweepShortlist& near = out[6];
  CHECK(near.holds());
  CHECK(near.measured_fastest_rank == 2);
  // Every sweep's odds sum to 1, under a rule the other groups' sweeps make finite.
  for (const SweepShortlist& s : out) {
    double total = 0;
    for (double o : s.odds) total += o;
    CHECK(total == Approx(1));
    CHECK(std::isfinite(s.sigma));
  }
}

TEST_CASE("shortlist check: the committed table's sweeps, out of sample, shortlist of 3", "[validation][shortlist]") {
  const std::vector<SweepShortlist> out = shortlist_check(load_residuals(), 3, 0.8);
  REQUIRE(out.size() >= 10);
  for (const SweepShortlist& s : out) {
    INFO(s.sweep << ": measured fastest " << s.measured_fastest << ", predicted #" << s.measured_fastest_rank);
    CHECK(s.holds());
  }
}

}  // namespace parallax::test
