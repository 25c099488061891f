// The mirror of Megatron-LM's start-up rules (megatron_rules.hpp) has teeth: an export that passes
// it breaks exactly the rule a one-flag change breaks. The changes are the command lines
// scripts/check_megatron_args.py saw Megatron-LM's own code refuse.
#include <catch2/catch.hpp>

#include <algorithm>

#include "megatron_rules.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/export/launchers.hpp"
#include "parallax/export/megatron.hpp"
#include "spec_builders.hpp"

using namespace parallax;
using parallax::test::MegatronLaunch;
using parallax::test::megatron_rule_violations;

namespace {

// gpt3-175b on 640 H100s: tp 8, pp 8, vpp 3, SP, selective recompute, the distributed optimizer
// with both overlaps, 150 micro-batches in groups of 10 (Megatron-Core).
MegatronLaunch interleaved_launch() {
  PlanFile f;
  f.model = load_model("gpt3-175b");
  f.cluster = load_cluster("dgx-h100-superpod");
  f.gpus = 640;
  f.job.global_batch = 1500;
  f.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), f.job);
  PlanSpec p = test::PlanBuilder(8, 8).interleaved(3).sequence_parallel().recompute(Recompute::selective).zero(1);
  p.dp = 10;
  p.num_micro_batches = 150;
  p.microbatch_group = 10;
  f.plan = p;
  return {megatron_args(f), 640, "1", 9};
}

void set(std::vector<std::string>& a, const std::string& flag, const std::string& value) {
  auto it = std::find(a.begin(), a.end(), flag);
  if (it == a.end()) {
    a.push_back(flag);
    if (!value.empty()) a.push_back(value);
  } else if (!value.empty()) {
    *(it + 1) = value;
  }
}

void drop(std::vector<std::string>& a, const std::string& flag) {
  auto it = std::find(a.begin(), a.end(), flag);
  REQUIRE(it != a.end());
  const bool has_value = it + 1 != a.end() && (it + 1)->rfind("--", 0) != 0;
  a.erase(it, it + (has_value ? 2 : 1));
}

// The launch breaks one rule, the one citing `where`.
void require_only(const MegatronLaunch& l, const std::string& where) {
  const std::vector<std::string> bad = megatron_rule_violations(l);
  INFO(where);
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].rfind(where, 0) == 0);
}

}  // namespace

TEST_CASE("the interleaved export in micro-batch groups passes Megatron's rules") {
  CHECK(megatron_rule_violations(interleaved_launch()).empty());
}

TEST_CASE("each mirrored Megatron rule fires on the command line that breaks it") {
  MegatronLaunch l = interleaved_launch();
  SECTION("world size") { l.world_size = 644; require_only(l, "arguments.py:432"); }
  SECTION("batch over dp") { set(l.args, "--global-batch-size", "1505"); require_only(l, "arguments.py:715"); }
  SECTION("default group with 150 % 8 != 0") {
    drop(l.args, "--microbatch-group-size-per-virtual-pipeline-stage");
    require_only(l, "core/pipeline_parallel/schedules.py:1173");
  }
  SECTION("group below pp") {
    set(l.args, "--microbatch-group-size-per-virtual-pipeline-stage", "6");
    require_only(l, "core/pipeline_parallel/schedules.py:1160");
  }
  SECTION("two ways of virtual stages") {
    set(l.args, "--num-virtual-stages-per-pipeline-rank", "3");
    require_only(l, "arguments.py:928");
  }
  SECTION("layers per virtual stage with uneven stages") {
    set(l.args, "--decoder-first-pipeline-num-layers", "12");
    require_only(l, "arguments.py:955");
  }
  SECTION("layers per virtual stage not dividing the stage") {
    set(l.args, "--num-layers-per-virtual-pipeline-stage", "5");
    CHECK(megatron_rule_violations(l).front().rfind("arguments.py:972", 0) == 0);
  }
  SECTION("no p2p overlap on pp 2") {
    set(l.args, "--pipeline-model-parallel-size", "2");
    set(l.args, "--num-layers-per-virtual-pipeline-stage", "16");
    set(l.args, "--microbatch-group-size-per-virtual-pipeline-stage", "40");
    set(l.args, "--global-batch-size", "6400");  // 640 / (8 * 2) = dp 40, 160 micro-batches
    l.args.push_back("--no-overlap-p2p-communication");
    require_only(l, "arguments.py:1002/1006");
  }
  SECTION("param gather without grad reduce") { drop(l.args, "--overlap-grad-reduce"); require_only(l, "arguments.py:1029"); }
  SECTION("param gather without the distributed optimizer") {
    drop(l.args, "--use-distributed-optimizer");
    require_only(l, "arguments.py:1024");
  }
  SECTION("TP overlap without SP") { drop(l.args, "--sequence-parallel"); require_only(l, "arguments.py:1442"); }
  SECTION("tp 8 on Hopper without one hardware queue") {
    l.cuda_device_max_connections.reset();
    require_only(l, "arguments.py:1477");
    l.sm_major = 10;  // Blackwell drops the requirement
    CHECK(megatron_rule_violations(l).empty());
  }
  SECTION("FSDP checkpoint format without FSDP") { set(l.args, "--ckpt-format", "fsdp_dtensor"); require_only(l, "arguments.py:1676"); }
  SECTION("FSDP") {
    set(l.args, "--use-megatron-fsdp", "");
    set(l.args, "--ckpt-format", "fsdp_dtensor");
    l.cuda_device_max_connections.emplace(1, '8');
    CHECK(megatron_rule_violations(l).empty());
    l.cuda_device_max_connections.emplace(1, '1');
    require_only(l, "arguments.py:1166");
    l.cuda_device_max_connections.reset();
    set(l.args, "--megatron-fsdp-version", "2");
    require_only(l, "arguments.py:1125");
  }
  SECTION("fp16 and bf16") { set(l.args, "--fp16", ""); require_only(l, "arguments.py:1196/1205"); }
  SECTION("selective recompute with a method") { set(l.args, "--recompute-method", "block"); require_only(l, "arguments.py:1426"); }
  SECTION("full recompute without a method") {
    set(l.args, "--recompute-granularity", "full");
    require_only(l, "core/transformer/transformer_config.py:1914/1919");
  }
  SECTION("positions shorter than the sequence") {
    set(l.args, "--max-position-embeddings", "1024");
    require_only(l, "arguments.py:1353");
  }
  SECTION("two data sources") { set(l.args, "--data-path", "/data/x"); require_only(l, "arguments.py:1679"); }
  SECTION("min lr above lr") { set(l.args, "--min-lr", "1.0e-3"); require_only(l, "arguments.py:1360"); }
}
