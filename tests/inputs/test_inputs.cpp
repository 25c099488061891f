// The front door's inputs (inputs/): flag text resolved into specs and the planner's inputs, with
// the rules of JSON input and errors that name the flag. The reference for the default job is the
// MT-NLG 530B paper's setting (Smith et al. 2022: 2240 A100s, global batch 1920, tp 8, pp 35).
#include <catch2/catch.hpp>

#include "../core/core_test_util.hpp"  // require_input_error
#include "parallax/core/job_fields.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "parallax/inputs/search_flags.hpp"
#include "spec_builders.hpp"

using namespace parallax;
using test::require_input_error;

TEST_CASE("inputs: numbers follow the rules of JSON input and name the flag", "[inputs]") {
  CHECK(parse_int("--gpus", "2240", 1, 10'000'000) == 2240);
  CHECK(parse_number("--tokens", "2.7e11", 0, 1e15) == Approx(2.7e11));
  require_input_error([] { (void)parse_int("--gpus", "12x", 1, 100); }, "--gpus", {"integer in [1, 100]", "12x"});
  require_input_error([] { (void)parse_int("--gpus", "", 1, 100); }, "--gpus", {"integer"});
  require_input_error([] { (void)parse_int("--gpus", "101", 1, 100); }, "--gpus", {"[1, 100]"});
  require_input_error([] { (void)parse_int("--gpus", "99999999999999999999", 1, 100); }, "--gpus", {"integer"});
  require_input_error([] { (void)parse_number("--price", "nan", 0, 10); }, "--price", {"finite number"});
  require_input_error([] { (void)parse_number("--price", "inf", 0, 10); }, "--price", {"finite number"});
}

TEST_CASE("inputs: the default job is MT-NLG 530B's, and predict's plan is the published one", "[inputs]") {
  const PlanOptions o;
  const ResolvedJob j = resolve_job(o);
  CHECK(j.model.name == "mt-nlg-530b");
  CHECK(j.gpus == 2240);
  CHECK(j.job.global_batch == 1920);
  CHECK(j.profile.name == load_cluster("dgx-a100-superpod").profile);
  const Resolved r = resolve(o);
  const PlanSpec published = test::mt_nlg_plan();
  CHECK(r.file.plan.tp == published.tp);
  CHECK(r.file.plan.pp == published.pp);
  CHECK(r.file.plan.dp == published.dp);
  CHECK(r.file.plan.micro_batch == published.micro_batch);
  CHECK(r.file.plan.num_micro_batches == published.num_micro_batches);  // 1920 / (1 * 8)
  CHECK(r.file.plan.recompute == published.recompute);
  CHECK(plan_line(r.file.plan) == "tp=8 pp=35 dp=8 mbs=1 m=240 schedule=1f1b recompute=full zero=0 order=tp-dp-pp");
}

TEST_CASE("inputs: a cp plan's line shows where cp is placed", "[inputs]") {
  // An order without cp places it right after tp: Megatron-Core's default order tp-cp-ep-dp-pp.
  PlanSpec p;
  p.tp = 8;
  p.cp = 16;
  p.dp = 128;
  CHECK(plan_line(p).find(" order=tp-cp-dp-pp") != std::string::npos);
  p.order = "dp-tp-cp-pp";
  CHECK(plan_line(p).find(" order=dp-tp-cp-pp") != std::string::npos);
}

TEST_CASE("inputs: planner_inputs carries the resolved job and the search flags, nothing else", "[inputs]") {
  // Strings move-assigned: GCC 12's -Wrestrict misfires on assigning short literals to strings.
  PlanOptions o;
  o.gpus = std::string("1120");
  SearchFlags s;
  s.recompute_allowed = std::string("selective,full");
  s.no_sp = true;
  s.force_tp = std::string("8");
  const ResolvedJob j = resolve_job(o);
  const PlannerInputs in = planner_inputs(j, s);
  CHECK(in.gpus == 1120);
  CHECK(in.model.name == j.model.name);
  CHECK(in.cluster.name == j.cluster.name);
  CHECK(in.job.global_batch == j.job.global_batch);
  CHECK(in.profile.name == j.profile.name);
  CHECK(in.options.recompute == std::vector<Recompute>{Recompute::selective, Recompute::full});
  CHECK_FALSE(in.options.sequence_parallel);
  CHECK(in.options.force_tp == 8);
  CHECK(in.options.force_pp == 0);
  const PlannerInputs defaults;  // top_k and threads stay the planner's
  CHECK(in.top_k == defaults.top_k);
  CHECK(in.threads == defaults.threads);
}

TEST_CASE("inputs: bad flags are refused naming the flag", "[inputs]") {
  SearchFlags s;
  s.recompute_allowed = "none,some";
  require_input_error([&] { (void)search_options(s); }, "--recompute-allowed", {"none, selective or full", "some"});
  s.recompute_allowed = "";
  require_input_error([&] { (void)search_options(s); }, "--recompute-allowed", {"at least one mode"});
  PlanOptions o;
  o.gpus = "4481";  // the superpod has 560 nodes x 8 = 4480 GPUs
  require_input_error([&] { (void)resolve_job(o); }, "--gpus", {"4480 GPUs", "4481"});
  PlanOptions tp5;
  tp5.value("tp") = std::string("5");
  tp5.value("pp") = std::string("7");
  require_input_error([&] { (void)resolve(tp5); }, "--tp", {"heads", "divisible"});
}

TEST_CASE("inputs: every plan flag sets its own field, and a bad value is refused naming it", "[inputs]") {
  // The published MT-NLG plan (the default options) with one flag off its default resolves to the
  // published plan with that field changed; a value past the field's rule names the flag.
  const PlanSpec published = resolve(PlanOptions{}).file.plan;
  PlanOptions zero1;
  zero1.value("zero") = "1";
  PlanSpec expected = published;
  expected.zero = 1;
  CHECK(resolve(zero1).file.plan == expected);
  PlanOptions sp;
  sp.value("sequence_parallel") = "true";
  expected = published;
  expected.sequence_parallel = true;
  CHECK(resolve(sp).file.plan == expected);
  for (const PlanField& f : plan_fields()) {
    if (f.derived || f.type != FieldType::integer) continue;
    INFO(f.key);
    PlanOptions o;
    o.value(f.key) = std::to_string(f.max + 1);
    require_input_error([&] { (void)resolve(o); }, f.flag, {std::to_string(f.max + 1)});
  }
  CHECK_THROWS_AS(PlanOptions{}.value("no_such_field"), std::out_of_range);
}

TEST_CASE("inputs: every job flag sets its own field, and a bad value is refused naming it", "[inputs]") {
  // The default options are MT-NLG 530B's published job (Smith et al. 2022: 1920 sequences, bf16);
  // one flag off its default changes only its field.
  const JobSpec published = resolve(PlanOptions{}).file.job;
  CHECK(published.global_batch == 1920);
  CHECK(published.dtype == Dtype::bf16);
  PlanOptions o;
  o.job_value("tokens") = "270e9";  // MT-NLG's 270 billion training tokens
  o.job_value("price_per_gpu_hour_usd") = "2.5";
  o.job_value("dtype") = "fp16";
  o.job_value("bytes_per_param") = "20";
  o.job_value("global_batch") = "2240";
  const JobSpec j = resolve(o).file.job;
  CHECK(j.tokens == 270e9);
  CHECK(j.price_per_gpu_hour_usd == 2.5);
  CHECK(j.dtype == Dtype::fp16);
  CHECK(j.bytes_per_param == ParamBytesConvention::b20);
  CHECK(j.global_batch == 2240);
  CHECK(j.framework == published.framework);
  for (const JobField& f : job_fields()) {
    if (f.flag == nullptr) continue;
    INFO(f.key);
    PlanOptions bad;
    bad.job_value(f.key) = "bad!";
    require_input_error([&] { (void)resolve(bad); }, f.flag, {});
  }
  CHECK_THROWS_AS(PlanOptions{}.job_value("no_such_field"), std::out_of_range);
}
