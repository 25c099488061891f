// The cost model reproduces the published runs (issue 2's bound): mean |error| <= 5%, max <= 12%.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/json_reader.hpp"
#include "parallax/costmodel/validation.hpp"

using namespace parallax;

TEST_CASE("published runs: mean |error| <= 5% and every row within 12%") {
  const std::string path = std::string(PARALLAX_SOURCE_DIR) + "/validation/published_runs.json";
  const ValidationReport rep = validate_runs(read_json_file(path), path, std::nullopt);
  REQUIRE(rep.rows.size() >= 21);
  for (const ValidationRow& r : rep.rows) {
    INFO(r.id << ": measured " << r.measured_tflops_per_gpu << " predicted "
              << r.predicted_tflops_per_gpu);
    CHECK(std::fabs(r.error_pct) <= 12.0);
    CHECK(r.fits);  // every published plan fits in memory
  }
  CHECK(rep.mean_abs_error_pct <= 5.0);
}
