// Fitting and the closed loop: α–β fits recover known parameters; a profile from nccl-tests
// output predicts the busbw the file printed; the cost model uses a profile's collective fits;
// a Megatron-LM log moves the prediction to the logged time; bad measurements are refused.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibration_test_util.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/measurements.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/predict.hpp"

using namespace parallax;

TEST_CASE("alpha-beta fit recovers the latency and busbw of an exact alpha-beta collective") {
  const double alpha = 12e-6, busbw = 7.5e9;
  const int64_t n = 4;
  const double factor = 2.0 * (n - 1) / n;  // all-reduce (nccl-tests PERFORMANCE.md)
  std::vector<std::pair<double, double>> pts;
  for (double b = 1024; b <= 256.0 * 1024 * 1024; b *= 4) pts.push_back({b, alpha + factor * b / busbw});
  const CollectiveFit f = calib::fit_alpha_beta(Collective::all_reduce, n, false, pts, "test", "ar");
  CHECK(f.alpha_s == Approx(alpha).epsilon(0.01));
  CHECK(f.busbw_bytes_per_s == Approx(busbw).epsilon(0.001));
  CHECK(fitted_time_s(f, n, 1e6) == Approx(alpha + factor * 1e6 / busbw).epsilon(0.001));
  // Another group size: same busbw, latency scaled by the ring's steps 2(n-1).
  CHECK(fitted_time_s(f, 8, 1e6) == Approx(alpha * 14.0 / 6.0 + 2.0 * 7 / 8 * 1e6 / busbw).epsilon(0.001));
}

TEST_CASE("alpha-beta fit refuses a single size and a time that does not grow") {
  parallax::test::require_input_error(
      [] { calib::fit_alpha_beta(Collective::all_reduce, 2, false, {{1e6, 1e-3}}, "f.txt", "all_reduce"); },
      "all_reduce", {"f.txt", "at least 2 message sizes"});
}

TEST_CASE("a profile from nccl-tests output predicts the all-reduce at the busbw the file printed") {
  const std::string text = parallax::test::read_data("nccl-tests-all-reduce-8xa100.txt");
  const calib::NcclTestsRun run = calib::parse_nccl_tests(text, "sample");
  const EfficiencyProfile base = load_profile("a100-megatron");
  const EfficiencyProfile p = calib::refit_from_nccl_tests(base, run, "sample");
  const CollectiveFit* f = p.collective_fit(Collective::all_reduce, GroupLayout{8, 1, 8});
  REQUIRE(f != nullptr);
  // Every row of the bandwidth plateau (256 MB and more): predicted busbw within 2% of the
  // out-of-place busbw the file printed for that size.
  int checked = 0;
  for (const calib::NcclTestsRow& r : run.rows) {
    if (r.size_bytes < 256e6) continue;
    const double t = fitted_time_s(*f, 8, r.size_bytes);
    const double busbw_gbps = r.size_bytes / t / 1e9 * 2.0 * 7 / 8;
    CHECK(busbw_gbps == Approx(r.oop_busbw_gbps).epsilon(0.02));
    ++checked;
  }
  CHECK(checked >= 4);
}

TEST_CASE("the cost model times TP all-reduces with the profile's fit") {
  // gpt-tiny, tp 8 on one DGX node, pp 1, no SP, no recompute: per layer 2 forward and 2
  // backward all-reduces of b*s*h*2 bytes (Megatron-LM), one for the embedding, one for the
  // logits' input gradient, and the cross-entropy's three fp32 values per token.
  const ModelSpec m = load_model("gpt-tiny");
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  JobSpec j;
  j.global_batch = 8;
  PlanSpec p;
  p.tp = 8;
  p.micro_batch = 2;
  p.num_micro_batches = 4;
  EfficiencyProfile prof = load_profile("a100-megatron");
  const CollectiveFit fit{Collective::all_reduce, false, 8, 20e-6, 100e9, "test"};
  prof.communication.push_back(fit);
  const IterationCosts ic = iteration_costs(m, c, j, p, prof);
  const double act = 2.0 * 2 * 64 * 128;
  const double ce = 3.0 * 4 * 2 * 64;
  auto t = [](double b) { return 20e-6 + 2.0 * 7 / 8 * b / 100e9; };
  const double expected = 4 * (4 * t(act)) + t(act) + t(act) + t(ce);
  CHECK(ic.stages[0].tp_comm_s == Approx(expected).epsilon(1e-9));
}

namespace {

// Narayanan et al.'s 1.7B (ptdp-1.7b) data-parallel only on DGX A100s, as the logs below ran it.
PlanFile data_parallel_1_7b(const JobSpec& job, int64_t dp, int64_t micro_batch, int64_t micro_batches) {
  PlanFile f;
  f.model = load_model("ptdp-1.7b");
  f.cluster = load_cluster("dgx-a100-superpod");
  f.job = job;
  f.plan.tp = 1;
  f.plan.pp = 1;
  f.plan.dp = dp;
  f.plan.micro_batch = micro_batch;
  f.plan.num_micro_batches = micro_batches;
  return f;
}

}  // namespace

TEST_CASE("a Megatron-LM log moves the plan's prediction to the logged iteration time") {
  const std::string text = parallax::test::read_data("megatron-lm-gpt-1.7b-32xa100.log");
  const calib::MegatronLog log = calib::parse_megatron_log(text, "log");
  // The log's "data-parallel size: 32" and "global batch size: 512", 4 per micro-batch.
  PlanFile f = data_parallel_1_7b(JobSpec{}, 32, 4, 4);
  f.job.global_batch = 512;
  const EfficiencyProfile base = load_profile("a100-megatron");
  const EfficiencyProfile p = calib::refit_from_megatron_log(base, log, f, "log");
  const double after = predict(f.model, f.cluster, f.job, f.plan, p).iteration_time_s;
  // Median of the logged iterations 10..50 (iteration 1 is warm-up): 2627.6 ms.
  CHECK(after == Approx(2.6276).epsilon(0.005));
  // The same log 30% slower: the prediction follows and the stack's compute scale drops.
  std::string slow;
  const std::string key = "elapsed time per iteration (ms): ";
  for (size_t at = 0, next; at < text.size(); at = next) {
    next = text.find(key, at);
    if (next == std::string::npos) {
      slow += text.substr(at);
      break;
    }
    next += key.size();
    slow += text.substr(at, next - at);
    size_t end = next;
    const double ms = std::stod(text.substr(next), &end);
    slow += std::to_string(ms * 1.3);
    next += end;
  }
  const EfficiencyProfile q = calib::refit_from_megatron_log(base, calib::parse_megatron_log(slow, "slow"), f, "slow");
  CHECK(predict(f.model, f.cluster, f.job, f.plan, q).iteration_time_s == Approx(1.3 * 2.6276).epsilon(0.005));
  CHECK(q.frameworks.at("megatron-lm").compute_efficiency_scale <
        0.9 * p.frameworks.at("megatron-lm").compute_efficiency_scale);
  f.job.global_batch = 1024;
  parallax::test::require_input_error([&] { calib::refit_from_megatron_log(base, log, f, "log"); },
                                      "line " + std::to_string(parallax::test::line_of(text, "iteration       10/")),
                                      {"global batch size 512", "does not match"});
}

TEST_CASE("a Megatron-Core log (fused attention, overlapped reduction) refits within the stack's range") {
  // 1.7B (Narayanan et al.'s 24 x 2304) on 252 A100s, data-parallel only, at about 165 TFLOP/s
  // per GPU by Megatron-Core's own count: a current run's log, in Megatron-Core's format.
  const std::string text = parallax::test::read_data("megatron-core-gpt-1.7b-252xa100.log");
  const calib::MegatronLog log = calib::parse_megatron_log(text, "core.log");
  nlohmann::json job = {{"global_batch", 2016}, {"framework", "megatron-core"}};
  JsonObjectReader jr(job, "job");
  PlanFile f = data_parallel_1_7b(read_job(jr), 252, 4, 2);  // "data-parallel size: 252"
  f.plan.zero = 1;
  const EfficiencyProfile base = load_profile("a100-megatron");
  const EfficiencyProfile p = calib::refit_from_megatron_log(base, log, f, "core.log");
  // The prediction lands on the median of iterations 10..50, 1116.1 ms ...
  CHECK(predict(f.model, f.cluster, f.job, f.plan, p).iteration_time_s == Approx(1.1161).epsilon(0.005));
  // ... with a compute scale in the range the corpus fits other stacks to (0.72-1.075), where the
  // first wave's model (unfused attention, nothing overlapped) could not explain it at all.
  const double scale = p.frameworks.at("megatron-core").compute_efficiency_scale;
  CHECK(scale > 0.7);
  CHECK(scale < 1.3);
  // Described as Megatron-LM 2021 ran it (unfused attention, no overlap), the same log needs the
  // kernels to run faster than the stack's own reference: the stack's physics is what explains it.
  PlanFile old = f;
  old.job.attention = Attention::unfused;
  old.job.overlap = StackOverlap{};
  const EfficiencyProfile q = calib::refit_from_megatron_log(base, log, old, "core.log");
  CHECK(q.frameworks.at("megatron-core").compute_efficiency_scale > scale);
}

// ---- a fit applies to the layout it was measured on ----------------------------------------------

namespace {

// MT-NLG 530B as trained (Smith et al. 2022): tp 8 within a DGX A100, pp 35, dp 8, 1920
// sequences per batch in micro-batches of 1. With TP innermost, a DP group's 8 ranks are 8
// apart: one GPU on each of 8 nodes.
PlanSpec mt_nlg_plan() {
  PlanSpec p;
  p.tp = 8;
  p.pp = 35;
  p.dp = 8;
  p.micro_batch = 1;
  p.num_micro_batches = 240;
  p.recompute = Recompute::full;
  return p;
}

}  // namespace

TEST_CASE("an all-reduce fit from 2 nodes x 8 GPUs leaves MT-NLG's 8-node x 1-GPU DP groups alone") {
  // The 2x8 sample's rank lines: ranks 0-7 on dgx-a100-01, 8-15 on dgx-a100-02.
  const std::string name = "nccl-tests-all-reduce-2x8xa100.txt";
  const calib::NcclTestsRun run = calib::parse_nccl_tests(parallax::test::read_data(name), name);
  const EfficiencyProfile base = load_profile("a100-megatron");
  REQUIRE(base.communication.empty());  // the preset's collectives come from the topology
  const EfficiencyProfile p = calib::refit_from_nccl_tests(base, run, name);
  REQUIRE(p.communication.size() == 1);
  const CollectiveFit& f = p.communication[0];
  CHECK(f.ranks == 16);
  CHECK(f.nodes == 2);
  CHECK(f.ranks_per_node == 8);
  CHECK(p.collective_fit(Collective::all_reduce, GroupLayout{16, 2, 8}) == &f);
  CHECK(p.collective_fit(Collective::all_reduce, GroupLayout{8, 8, 1}) == nullptr);   // MT-NLG DP
  CHECK(p.collective_fit(Collective::all_reduce, GroupLayout{16, 16, 1}) == nullptr);
  CHECK(p.collective_fit(Collective::all_reduce, GroupLayout{32, 4, 8}) == nullptr);
  CHECK(p.collective_fit(Collective::all_reduce, GroupLayout{8, 1, 8}) == nullptr);
  // MT-NLG's gradient all-reduce keeps the topology's time: the same as with no fit at all.
  const ModelSpec m = load_model("mt-nlg-530b");
  const ClusterSpec c = load_cluster("dgx-a100-superpod");
  JobSpec j;
  j.global_batch = 1920;
  const IterationCosts without = iteration_costs(m, c, j, mt_nlg_plan(), base);
  const IterationCosts with = iteration_costs(m, c, j, mt_nlg_plan(), p);
  REQUIRE(without.dp_s.size() == 35);
  for (size_t s = 0; s < without.dp_s.size(); ++s) CHECK(with.dp_s[s] == without.dp_s[s]);
  // A plan whose DP groups are 2 nodes x 8 GPUs (tp 1, dp 16 on 16 GPUs) does take the fit.
  PlanSpec dp16;
  dp16.dp = 16;
  dp16.micro_batch = 1;
  dp16.num_micro_batches = 1;
  JobSpec j16;
  j16.global_batch = 16;
  const ModelSpec small = load_model("gpt-tiny");
  CHECK(iteration_costs(small, c, j16, dp16, p).dp_s[0] !=
        iteration_costs(small, c, j16, dp16, base).dp_s[0]);
}

TEST_CASE("a table alone gives no layout: the refit asks for the rank lines") {
  std::string text = parallax::test::read_data("nccl-tests-all-reduce-8xa100.txt");
  text = text.substr(text.find("#                                                              out-of-place"));
  parallax::test::require_input_error(
      [&] { calib::refit_from_nccl_tests(load_profile("a100-megatron"), calib::parse_nccl_tests(text, "t.txt"), "t.txt"); },
      "rank lines", {"t.txt", "8 ranks", "nodes", "#  Rank"});
}

TEST_CASE("profile JSON: a fit's layout round-trips; a fit without one keeps its rank count") {
  const std::string name = "nccl-tests-all-reduce-2x8xa100.txt";
  const EfficiencyProfile p = calib::refit_from_nccl_tests(
      load_profile("a100-megatron"), calib::parse_nccl_tests(parallax::test::read_data(name), name), name);
  nlohmann::json j = to_json(p);
  REQUIRE(j.at("communication").size() == 1);
  CHECK(j.at("communication")[0].at("nodes") == 2);
  CHECK(j.at("communication")[0].at("ranks_per_node") == 8);
  {
    JsonObjectReader r(j, "p.json");
    const EfficiencyProfile back = read_profile(r);
    REQUIRE(back.communication.size() == 1);
    CHECK(back.communication[0].nodes == 2);
    CHECK(back.communication[0].ranks_per_node == 8);
  }
  // A profile written before layouts: the fit applies to 16-rank groups spanning nodes only.
  j.at("communication")[0].erase("nodes");
  j.at("communication")[0].erase("ranks_per_node");
  {
    JsonObjectReader r(j, "old.json");
    const EfficiencyProfile old = read_profile(r);
    CHECK(old.collective_fit(Collective::all_reduce, GroupLayout{16, 2, 8}) != nullptr);
    CHECK(old.collective_fit(Collective::all_reduce, GroupLayout{16, 16, 1}) != nullptr);
    CHECK(old.collective_fit(Collective::all_reduce, GroupLayout{8, 8, 1}) == nullptr);
    CHECK(old.collective_fit(Collective::all_reduce, GroupLayout{32, 4, 8}) == nullptr);
  }
  // A layout that contradicts the span or cannot hold the ranks.
  j.at("communication")[0]["nodes"] = 1;
  j.at("communication")[0]["ranks_per_node"] = 16;
  parallax::test::require_input_error([&] { JsonObjectReader r(j, "bad.json"); (void)read_profile(r); },
                                      "$.communication[0].nodes", {"must be > 1 for span inter_node"});
  j.at("communication")[0]["nodes"] = 2;
  j.at("communication")[0]["ranks_per_node"] = 4;
  parallax::test::require_input_error([&] { JsonObjectReader r(j, "bad.json"); (void)read_profile(r); },
                                      "$.communication[0].ranks_per_node", {"2 x 4 for 16 ranks"});
}
