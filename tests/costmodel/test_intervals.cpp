// The prediction interval's rule (costmodel/intervals.hpp) on tables built by hand: the conformal
// order statistics of Barber et al. 2021 over sources (ranks floor((n+1)(1-L)/2) and
// ceil((n+1)(1+L)/2) with one row per source), every source weighing the same whatever its rows,
// the sources they need, and the fallback from a job's group to its parent when too few share it.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "parallax/costmodel/intervals.hpp"

namespace parallax::test {
namespace {

JobFeatures h100_dense() {
  JobFeatures f;
  f.stack = "megatron-core";
  f.arch = "sm90";
  f.seq_len = 4096;
  f.gpus = 512;
  return f;
}

// A row of its own source (and group, unless given), measured / predicted = ratio.
ResidualRow row(const std::string& source, const JobFeatures& f, double ratio, const std::string& group = "") {
  ResidualRow r;
  r.id = source;
  r.source = source;
  r.group = group.empty() ? source : group;
  r.features = f;
  r.predicted_iteration_time_s = 10;
  r.measured_iteration_time_s = 10 * ratio;
  return r;
}

}  // namespace

TEST_CASE("intervals: the conformal order statistics of the comparable sources' residuals", "[costmodel][intervals]") {
  ResidualTable t;
  // 19 sources of one row each, measured / predicted 0.90, 0.91, ..., 1.08, listed out of order.
  for (int i = 18; i >= 0; --i) t.rows.push_back(row("s" + std::to_string(i), h100_dense(), 0.90 + 0.01 * i));
  // n 19 at 80%: ranks floor(20 x 0.1) = 2 and ceil(20 x 0.9) = 18, ratios 0.91 and 1.07.
  const PredictionInterval iv = prediction_interval(t, h100_dense(), 0.8);
  CHECK(iv.rows == 19);
  CHECK(iv.sources == 19);
  CHECK(iv.low_ratio == Approx(0.91).epsilon(1e-12));
  CHECK(iv.high_ratio == Approx(1.07).epsilon(1e-12));
  CHECK(iv.dropped.empty());
  CHECK(iv.basis.size() == 8);
  // At 50%: ranks floor(20 x 0.25) = 5 and ceil(20 x 0.75) = 15, ratios 0.94 and 1.04.
  const PredictionInterval half = prediction_interval(t, h100_dense(), 0.5);
  CHECK(half.low_ratio == Approx(0.94).epsilon(1e-12));
  CHECK(half.high_ratio == Approx(1.04).epsilon(1e-12));
}

TEST_CASE("intervals: a source weighs the same whatever its rows", "[costmodel][intervals]") {
  // Nine sources of one row (0.91 ... 0.99) and one of fifty rows at 1.5: ten sources, each
  // 1/11. From the top, the fifty rows weigh 1/11 together, so the low end needs all nine single
  // rows: 0.91, the lowest. Counted as 59 rows alike, it would be rank floor(60 x 0.1) = 6: 0.96.
  ResidualTable t;
  for (int i = 1; i <= 9; ++i) t.rows.push_back(row("s" + std::to_string(i), h100_dense(), 0.90 + 0.01 * i));
  for (int i = 0; i < 50; ++i) t.rows.push_back(row("big", h100_dense(), 1.5));
  const PredictionInterval iv = prediction_interval(t, h100_dense(), 0.8);
  CHECK(iv.sources == 10);
  CHECK(iv.rows == 59);
  CHECK(iv.low_ratio == Approx(0.91).epsilon(1e-12));
  CHECK(iv.high_ratio == Approx(1.5).epsilon(1e-12));
}

TEST_CASE("intervals: a level needs (1 + L) / (1 - L) sources for finite ends", "[costmodel][intervals]") {
  ResidualTable t;
  for (int i = 0; i < 9; ++i) t.rows.push_back(row("s" + std::to_string(i), h100_dense(), 0.8 + 0.05 * i));
  // 80%: 9 sources, the smallest and largest residual are the ends (ranks 1 and 9).
  const PredictionInterval iv = prediction_interval(t, h100_dense(), 0.8);
  CHECK(iv.needed == 9);
  CHECK(iv.low_ratio == Approx(0.8));
  CHECK(iv.high_ratio == Approx(1.2));
  CHECK(prediction_interval(t, h100_dense(), 0.5).needed == 3);
  // 90%: 19 sources needed; 9 leave it unbounded.
  const PredictionInterval wide = prediction_interval(t, h100_dense(), 0.9);
  CHECK(wide.needed == 19);
  CHECK(wide.sources == 9);
  CHECK(wide.low_ratio == 0);
  CHECK(std::isinf(wide.high_ratio));
  // Nine rows of one source are one source: no finite 80% interval.
  ResidualTable one;
  for (int i = 0; i < 9; ++i) one.rows.push_back(row("s", h100_dense(), 0.8 + 0.05 * i));
  CHECK(std::isinf(prediction_interval(one, h100_dense(), 0.8).high_ratio));
}

TEST_CASE("intervals: too few sources like the job fall back to its parent group, and say so", "[costmodel][intervals]") {
  ResidualTable t;
  // Three sources at the job's own scale (65-512 GPUs) and nine at 2,048 GPUs (one group), alike
  // otherwise.
  JobFeatures big = h100_dense();
  big.gpus = 2048;
  for (int i = 0; i < 3; ++i) t.rows.push_back(row("own" + std::to_string(i), h100_dense(), 1.0));
  for (int i = 0; i < 9; ++i) t.rows.push_back(row("big" + std::to_string(i), big, 1.1, "b"));
  const PredictionInterval iv = prediction_interval(t, h100_dense(), 0.8);
  CHECK(iv.sources == 12);
  REQUIRE(iv.dropped.size() == 1);
  CHECK(iv.dropped[0] == "65-512 GPUs");
  CHECK(iv.basis.size() == 7);
  // A dense job of another stack matches no row until the stack is given up (the 4th feature).
  JobFeatures other = h100_dense();
  other.stack = "torchtitan";
  const PredictionInterval far = prediction_interval(t, other, 0.8);
  CHECK(far.sources == 12);
  CHECK(far.basis == std::vector<std::string>{"dense", "not ZeRO-3/FSDP", "GPU sm90"});
  // Without group b's nine sources, no group of the job has nine: every feature is given up, and
  // the three sources left cannot bound an 80% interval.
  const PredictionInterval alone = prediction_interval(t, h100_dense(), 0.8, "b");
  CHECK(alone.sources == 3);
  CHECK(alone.basis.empty());
  CHECK(std::isinf(alone.high_ratio));
}

TEST_CASE("ties: the ratio error is the conformal quantile of |d| over sweeps, each weighing the same",
          "[costmodel][intervals]") {
  // Four sweeps of two plans each: d = r_A - r_B = ln(ratio_A / ratio_B), |d| 0.01 ... 0.04. Each
  // sweep weighs 1/5; 80% of the weight is reached at the 4th: |d| 0.04.
  ResidualTable t;
  for (int k = 1; k <= 4; ++k) {
    ResidualRow a = row("a" + std::to_string(k), h100_dense(), 1.0), b = row("b" + std::to_string(k), h100_dense(), std::exp(0.01 * k));
    a.sweep = b.sweep = "sweep" + std::to_string(k);
    t.rows.push_back(a);
    t.rows.push_back(b);
  }
  const TieRule r = tie_rule(t, 0.8);
  CHECK(r.needed == 4);
  CHECK(r.sweeps == 4);
  CHECK(r.pairs == 4);
  CHECK(r.log_ratio == Approx(0.04).epsilon(1e-9));
  CHECK(r.tied(10 * std::exp(0.039), 10));
  CHECK(!r.tied(10 * std::exp(0.041), 10));
  // At 50%: 2/5 < 0.5 <= 3/5, the 3rd sweep's 0.03.
  CHECK(tie_rule(t, 0.5).log_ratio == Approx(0.03).epsilon(1e-9));
  // A fifth sweep of three plans (three pairs, |d| 0.5, 0.5, 0) weighs as one sweep, its pairs
  // 1/18 each of the five sweeps' 1/6.
  for (const double ratio : {1.0, std::exp(0.5), 1.0}) {
    ResidualRow c = row("c" + std::to_string(t.rows.size()), h100_dense(), ratio);
    c.sweep = "wide";
    t.rows.push_back(c);
  }
  const TieRule five = tie_rule(t, 0.8);
  CHECK(five.sweeps == 5);
  CHECK(five.pairs == 7);
  // Sorted |d|: 0 (1/18), 0.01, 0.02, 0.03, 0.04 (1/6 each), 0.5, 0.5 (1/18 each): 1/18 + 4/6 =
  // 0.72 < 0.8, so the end is 0.5.
  CHECK(five.log_ratio == Approx(0.5).epsilon(1e-9));
  // Three sweeps cannot say at 80%: nothing is marked tied.
  ResidualTable few;
  for (size_t i = 0; i < 6; ++i) few.rows.push_back(t.rows[i]);
  CHECK(std::isinf(tie_rule(few, 0.8).log_ratio));
}

TEST_CASE("intervals: a job's features come from its model, GPU, stack and plan", "[costmodel][intervals]") {
  ModelSpec m;
  m.seq_len = 8192;
  m.moe.num_experts = 8;
  ClusterSpec c;
  c.gpu.name = "h100-sxm";
  c.gpu.arch = "sm90";
  JobSpec j;
  j.framework = "megatron-core";
  j.dtype = Dtype::fp8;
  PlanSpec p;
  p.tp = 2;
  p.cp = 2;
  p.pp = 4;
  p.dp = 8;
  p.zero = 3;
  const JobFeatures f = job_features(m, c, j, p);
  CHECK(f.moe);
  CHECK(f.sharded);
  CHECK(f.cp);
  CHECK(f.fp8);
  CHECK(f.gpus == 2 * 2 * 4 * 8);
  CHECK(f.arch == "sm90");
  CHECK(f.seq_len == 8192);
  p.zero = 1;
  CHECK(!job_features(m, c, j, p).sharded);
}

}  // namespace parallax::test
