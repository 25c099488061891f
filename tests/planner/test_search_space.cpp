// The search space: every candidate is admitted or rejected by exactly one named rule, and the
// rules are the trainers' (Megatron-LM / DeepSpeed) rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "parallax/core/presets.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/planner/planner.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

PlannerInputs mtnlg(int64_t gpus) {
  PlannerInputs in;
  in.model = load_model("mt-nlg-530b");
  in.cluster = load_cluster("dgx-a100-superpod");
  in.job.global_batch = 1920;
  in.gpus = gpus;
  in.profile = load_profile(in.cluster.profile);
  return in;
}

int64_t sum(const std::map<std::string, int64_t>& m) {
  return std::accumulate(m.begin(), m.end(), int64_t{0},
                         [](int64_t a, const auto& kv) { return a + kv.second; });
}

}  // namespace

TEST_CASE("every considered plan is admitted or rejected by exactly one rule") {
  const PlannerInputs in = mtnlg(2240);
  const Candidates c = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
  CHECK(c.considered == static_cast<int64_t>(c.admitted.size()) + sum(c.rejected_by_rule));
  CHECK(sum(c.rejected_by_rule) == sum(c.rejected_by_reason));
  for (const PlanSpec& p : c.admitted) {
    CHECK(p.tp * p.cp * p.pp * p.dp == 2240);
    CHECK(2048 % (2 * p.cp) == 0);  // causal load balancing cuts the sequence into 2cp chunks
    CHECK(p.micro_batch * p.num_micro_batches * p.dp == 1920);
    CHECK(128 % p.tp == 0);
    CHECK(105 % (p.pp * p.vpp) == 0);
    CHECK(p.tp <= 8);
    CHECK_FALSE((p.zero >= 2 && p.pp > 1));
    CHECK(p.schedule != Schedule::gpipe);
    if (p.schedule == Schedule::interleaved) {
      if (p.microbatch_group == 0) CHECK(p.num_micro_batches % p.pp == 0);
      else CHECK(microbatch_group_refusal(p.pp, p.num_micro_batches, p.microbatch_group).empty());
    }
    if (p.sequence_parallel) CHECK(p.tp > 1);
  }
}

TEST_CASE("interleaving with m % pp != 0 takes the smallest micro-batch group where the stack has groups") {
  // MT-NLG on 2240 GPUs: pp 5 (dp 56) leaves 1920 / 56 - not an integer; pp 7 (dp 40) leaves
  // 48 micro-batches of 1, 48 % 7 = 6: Megatron-Core runs groups of N with 7 <= N <= 48 and
  // 48 % N zero or >= 7, the smallest N = 8.
  for (const char* stack : {"megatron-lm", "megatron-core"}) {
    PlannerInputs in = mtnlg(2240);
    apply_stack(load_stack(stack), in.job);
    in.job.framework = stack;
    const Candidates c = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
    int64_t grouped = 0, pp7 = 0;
    for (const PlanSpec& p : c.admitted) {
      if (p.schedule != Schedule::interleaved) continue;
      if (p.num_micro_batches % p.pp == 0) {
        CHECK(p.microbatch_group == 0);
        continue;
      }
      ++grouped;
      CHECK(p.microbatch_group == smallest_microbatch_group(p.pp, p.num_micro_batches));
      if (p.pp == 7 && p.num_micro_batches == 48) {
        ++pp7;
        CHECK(p.microbatch_group == 8);
      }
    }
    INFO(stack);
    // Megatron-LM (2021-2022) walks groups of pp only; Megatron-Core admits the others.
    if (std::string(stack) == "megatron-lm") CHECK(grouped == 0);
    else CHECK((grouped > 0 && pp7 > 0));
  }
}

TEST_CASE("a stack that cuts the pipeline itself is searched with its cut") {
  // BLOOM's 70 layers do not divide over pp 12; DeepSpeed's PipelineModule (the deepspeed
  // stack's uneven_stages "deepspeed_balanced") runs ceil(70 / 12) = 6 per stage from the first,
  // 70 - 11 * 6 = 4 on the last: the planner considers that split without --uneven-pp.
  PlannerInputs in = mtnlg(384);
  in.model = load_model("bloom-176b");
  in.job.global_batch = 2048;
  apply_stack(load_stack("deepspeed"), in.job);
  in.job.framework = "deepspeed";
  const Candidates c = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
  int64_t pp12 = 0;
  for (const PlanSpec& p : c.admitted) {
    if (p.pp != 12) continue;
    ++pp12;
    CHECK(p.first_stage_layers == 6);
    CHECK(p.last_stage_layers == 4);
  }
  CHECK(pp12 > 0);
}

TEST_CASE("trainer rules reject ZeRO-3 with pipelining and GPipe; --allow-all admits them") {
  PlannerInputs in = mtnlg(2240);
  PlanSpec p = test::PlanBuilder(8, 35, 8).batches(1, 240).zero(3);
  const Rule* r = first_broken_rule(in.model, in.cluster, in.job, p, 2240, in.options);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "zero23-needs-pp1");
  CHECK(r->reason == RejectReason::trainer_rule);
  p.zero = 0;
  p.schedule = Schedule::gpipe;
  r = first_broken_rule(in.model, in.cluster, in.job, p, 2240, in.options);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "gpipe-not-in-trainers");
  in.options.allow_all = true;
  CHECK(first_broken_rule(in.model, in.cluster, in.job, p, 2240, in.options) == nullptr);
}

TEST_CASE("TP beyond a node is a topology rejection unless allowed") {
  PlannerInputs in = mtnlg(2240);
  PlanSpec p = test::PlanBuilder(16, 35, 4);
  const Rule* r = first_broken_rule(in.model, in.cluster, in.job, p, 2240, in.options);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "tp-within-node");
  in.options.allow_cross_node_tp = true;
  CHECK(first_broken_rule(in.model, in.cluster, in.job, p, 2240, in.options) == nullptr);
}

TEST_CASE("the search ranks fitting plans by time and reports memory rejections") {
  const PlannerInputs in = mtnlg(2240);
  const SearchResult res = search_plans(in);
  REQUIRE(res.plans.size() > 10);
  for (size_t i = 1; i < res.plans.size(); ++i) {
    CHECK(res.plans[i - 1].time_s <= res.plans[i].time_s);
  }
  for (const RankedPlan& r : res.plans) CHECK(r.prediction.fits);
  CHECK(res.rejected_by_rule.count(kMemoryRule) == 1);  // e.g. no recompute with dp = 2240
  CHECK(res.evaluated == static_cast<int64_t>(res.plans.size()) + res.rejected_by_rule.at(kMemoryRule));
}

TEST_CASE("pricing only the plans that fit leaves every ranked plan as predict() alone prices it") {
  // The search asks memory first and prices a plan only where it fits (or the caller keeps the
  // unfit ones). The reference is predict() called for each plan by itself, and the search that
  // prices everything (record_candidates).
  PlannerInputs in = mtnlg(2240);
  const SearchResult lean = search_plans(in, Refiner{});
  in.options.record_candidates = true;
  const SearchResult full = search_plans(in, Refiner{});
  REQUIRE(lean.plans.size() == full.plans.size());
  CHECK(lean.rejected_by_rule.at(kMemoryRule) == static_cast<int64_t>(full.unfit.size()));
  CHECK(lean.unfit.empty());
  for (size_t i = 0; i < lean.plans.size(); ++i) {
    REQUIRE(lean.plans[i].plan == full.plans[i].plan);
    CHECK(lean.plans[i].time_s == full.plans[i].time_s);
  }
  for (size_t i = 0; i < lean.plans.size(); i += 7) {
    const Prediction alone = predict(in.model, in.cluster, in.job, lean.plans[i].plan, in.profile);
    CHECK(lean.plans[i].time_s == alone.iteration_time_s);
    CHECK(lean.plans[i].prediction.peak_bytes == alone.peak_bytes);
  }
  for (const RankedPlan& r : full.unfit) {
    const Prediction mem =
        predict_memory(in.cluster, in.job, r.plan, in.profile, stage_memory(in.model, in.job, r.plan));
    CHECK_FALSE(mem.fits);
    CHECK(mem.peak_bytes == r.prediction.peak_bytes);
  }
}

TEST_CASE("when nothing fits, the closest plan is reported priced as predict() prices it") {
  const PlannerInputs in = mtnlg(64);  // 530B on 64 A100s: 18 bytes a parameter is 150 GB a GPU
  const SearchResult res = search_plans(in, Refiner{});
  REQUIRE(res.plans.empty());
  REQUIRE(res.closest);
  const Prediction alone = predict(in.model, in.cluster, in.job, res.closest->plan, in.profile);
  CHECK(res.closest->time_s > 0);
  CHECK(res.closest->time_s == alone.iteration_time_s);
  CHECK(res.closest->prediction.peak_bytes == alone.peak_bytes);
  CHECK_FALSE(res.closest->prediction.fits);
}

TEST_CASE("a refiner re-ranks the top k") {
  const PlannerInputs in = mtnlg(2240);
  // A refiner that penalises the analytic winner: it must drop from first place.
  const SearchResult base = search_plans(in);
  const PlanSpec first = base.plans.front().plan;
  const SearchResult res = search_plans(in, [&](const PlanSpec& p, const Prediction& pr) {
    return p == first ? 10 * pr.iteration_time_s : pr.iteration_time_s;
  });
  CHECK_FALSE(res.plans.front().plan == first);
  CHECK(res.plans.front().refined);
}

TEST_CASE("uneven-pp admits pipeline depths that do not divide the layers") {
  PlannerInputs in;
  in.model = load_model("gpt3-175b");  // 96 layers: pp 7 only with lighter first/last stages
  in.cluster = load_cluster("dgx-a100-superpod");
  in.job.global_batch = 1792;
  in.gpus = 448;  // 8 x 7 x 8
  in.profile = load_profile(in.cluster.profile);
  const Candidates even = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
  for (const PlanSpec& p : even.admitted) CHECK(p.pp != 7);
  in.options.uneven_pp = true;
  const Candidates all = enumerate_plans(in.model, in.cluster, in.job, in.gpus, in.options);
  int64_t pp7 = 0;
  for (const PlanSpec& p : all.admitted) {
    if (p.pp != 7) continue;
    ++pp7;
    // 96 = f + 5 x middle + f with middle > f: f in {3, 8, 13}.
    CHECK((p.first_stage_layers == 3 || p.first_stage_layers == 8 || p.first_stage_layers == 13));
    CHECK(p.first_stage_layers == p.last_stage_layers);
    CHECK(p.schedule != Schedule::interleaved);
    CHECK_NOTHROW(validate_plan(in.model, in.cluster, in.job, p, in.gpus, "test"));
  }
  CHECK(pp7 > 0);
  // And they predict: the lighter first stage holds fewer parameters than a middle one.
  for (const PlanSpec& p : all.admitted) {
    if (p.pp != 7) continue;
    const Prediction pr = predict(in.model, in.cluster, in.job, p, in.profile);
    CHECK(pr.memory[0].params < pr.memory[3].params);
    CHECK(std::isfinite(pr.iteration_time_s));
    break;
  }
}
