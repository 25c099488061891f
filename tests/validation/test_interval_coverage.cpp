// The prediction intervals on the corpus, out of sample: each row's interval built from the other
// source groups' rows of the committed residual table (presets/residuals/corpus.json), as a new
// job's would be. Issue 62: at 80%, 75-85% of all rows inside and at least 65% of the rows of every
// source with 10 or more. At 50% too, so that an interval right at one level only does not pass:
// conformal coverage over n exchangeable sources lies between L and L + 1 / (n + 1) (Barber et al.
// 2021), 50-59% over the 10 sources left when one is out, so 45-60% overall and the same 15 points
// below L per source as at 80%.
#include <catch2/catch.hpp>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/validation/residuals.hpp"

namespace parallax::test {

TEST_CASE("interval coverage: the committed residual table's intervals hold their level on the corpus, out of sample",
          "[validation][intervals]") {
  const ResidualTable t = load_residuals();
  REQUIRE(t.rows.size() >= 200);
  struct Level {
    double level, low, high, per_source;
  };
  for (const Level l : {Level{0.8, 0.75, 0.85, 0.65}, Level{0.5, 0.45, 0.60, 0.35}}) {
    INFO("level " << l.level);
    const CoverageReport c = interval_coverage(t, l.level);
    CHECK(c.all.rows == t.rows.size());
    CHECK(c.all.share() >= l.low);
    CHECK(c.all.share() <= l.high);
    for (const auto& [source, cov] : c.by_source) {
      if (cov.rows < 10) continue;
      INFO(source << ": " << cov.inside << " of " << cov.rows);
      CHECK(cov.share() >= l.per_source);
    }
  }
}

}  // namespace parallax::test
