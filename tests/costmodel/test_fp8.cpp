// FP8 recipes in the cost model, derived by hand: which GEMMs run at the fp8 peak, the casts each
// fp8 input costs (delayed or current scaling, weights per iteration or per micro-batch), and the
// shard a cast works on under sequence parallelism.
#include <catch2/catch.hpp>

#include <string>

#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/costmodel/ops.hpp"
#include "op_lookup.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

// s 1024, h 1024, a 16, f 4096, GELU: qkv N = 3h, fc1 N = f.
const ModelSpec kModel = test::gpt_shape("t", 2, 1024, 16, 4096, 1024, 51200);

JobSpec fp8_job(Fp8Scaling scaling, bool weight_per_mb) {
  JobSpec j;
  j.dtype = Dtype::fp8;
  j.fp8.scaling = scaling;
  j.fp8.weight_cast_per_micro_batch = weight_per_mb;
  return j;
}

std::vector<Op> ops_for(const JobSpec& j, int64_t tp, bool sp) {
  const PlanSpec p = test::PlanBuilder(tp, 1).batches(1, 1).sequence_parallel(sp);
  return layer_ops(kModel, shard_shape(kModel, j, p), Recompute::none);
}

}  // namespace

TEST_CASE("fp8: the linear layers' three GEMMs run in fp8, attention and the output layer do not") {
  const JobSpec j = fp8_job(Fp8Scaling::delayed, false);
  const std::vector<Op> v = ops_for(j, 1, false);
  for (const char* n : {"qkv", "qkv.dgrad", "qkv.wgrad", "proj", "fc1", "fc1.wgrad", "fc2.dgrad"}) {
    INFO(n);
    REQUIRE(test::find_op(v, n));
    CHECK(test::find_op(v, n)->fp8);
  }
  CHECK_FALSE(test::find_op(v, "attn.scores")->fp8);
  const PlanSpec p = test::PlanBuilder(1, 1).batches(1, 1);
  const std::vector<Op> head = head_ops(kModel, shard_shape(kModel, j, p));
  CHECK_FALSE(test::find_op(head, "logits")->fp8);
  // A bf16 job has no fp8 GEMMs and no casts.
  JobSpec bf16;
  for (const Op& o : ops_for(bf16, 1, false)) {
    CHECK_FALSE(o.fp8);
    CHECK(std::string(o.op_class).rfind("fp8_cast", 0) != 0);
  }
}

TEST_CASE("fp8: each cast reads 16 bits and writes fp8 and its transpose; current scaling reads once more") {
  const double s = 1024, h = 1024, f = 4096;
  const std::vector<Op> d = ops_for(fp8_job(Fp8Scaling::delayed, false), 1, false);
  // qkv's input X [s, h]: 2 + 1 + 1 bytes per element.
  CHECK(test::find_op(d, "fp8_cast.qkv")->bytes == Approx(s * h * 4));
  // fc2's input is the FFN activation [s, f]; its output gradient [s, h].
  CHECK(test::find_op(d, "fp8_cast.fc2")->bytes == Approx(s * f * 4));
  CHECK(test::find_op(d, "fp8_cast.fc2.bwd")->bytes == Approx(s * h * 4));
  CHECK(test::find_op(d, "fp8_cast.fc1.bwd")->bytes == Approx(s * f * 4));
  CHECK(std::string(test::find_op(d, "fp8_cast.fc2.bwd")->op_class) == "fp8_cast.bwd");
  CHECK(test::find_op(d, "fp8_cast.fc2.bwd")->phase == Phase::backward_data);
  // Weights cast per iteration: no per-micro-batch weight cast.
  CHECK_FALSE(test::find_op(d, "fp8_cast.qkv.weight"));
  // Current scaling: the amax pass reads the 16-bit tensor once more (6 bytes per element);
  // weights cast per micro-batch: qkv's [h, 3h] weight.
  const std::vector<Op> c = ops_for(fp8_job(Fp8Scaling::current, true), 1, false);
  CHECK(test::find_op(c, "fp8_cast.qkv")->bytes == Approx(s * h * 6));
  REQUIRE(test::find_op(c, "fp8_cast.qkv.weight"));
  CHECK(test::find_op(c, "fp8_cast.qkv.weight")->bytes == Approx(h * 3 * h * 6));
}

TEST_CASE("fp8: an MXFP8 cast writes both block-scaled copies and a scale byte per 32 elements each") {
  // Transformer Engine's MXFP8 quantize: one read of the 16-bit tensor (the block amax is taken in
  // the same pass, no amax pass), the rowwise and the columnwise fp8 copies (1 + 1 bytes) and one
  // E8M0 scale per 32 elements for each copy (2 / 32 bytes): 4.0625 bytes per element.
  const double s = 1024, h = 1024;
  const std::vector<Op> mx = ops_for(fp8_job(Fp8Scaling::mxfp8, false), 1, false);
  CHECK(test::find_op(mx, "fp8_cast.qkv")->bytes == Approx(s * h * (2 + 1 + 1 + 2.0 / 32)));
  CHECK(test::find_op(mx, "fp8_cast.fc2.bwd")->bytes == Approx(s * h * 4.0625));
  CHECK(std::string(to_string(Fp8Scaling::mxfp8)) == "mxfp8");
  CHECK(fp8_scaling_from("mxfp8") == Fp8Scaling::mxfp8);
  CHECK_FALSE(fp8_scaling_from("tensorwise"));
}

TEST_CASE("fp8: MXFP8 needs Blackwell; the plan rules refuse it on Hopper and name the stack") {
  JobSpec j = fp8_job(Fp8Scaling::mxfp8, false);
  j.framework = "megatron-core";
  j.global_batch = 8;
  const PlanSpec p = test::PlanBuilder(1, 1, 8).batches(1, 1);
  CHECK_NOTHROW(validate_plan(kModel, load_cluster("dgx-b200-superpod"), j, p, 8, "test"));
  CHECK_THROWS_WITH(validate_plan(kModel, load_cluster("dgx-h100-superpod"), j, p, 8, "test"),
                    Catch::Contains("$.job.framework") &&
                        Catch::Contains("MXFP8 block scaling, which needs Blackwell (compute capability 10 or "
                                        "later), not GPU \"h100-sxm\""));
}

TEST_CASE("fp8: under sequence parallelism the gathered tensor is cast on this rank's shard") {
  const double s = 1024, h = 1024, f = 4096, t = 2;
  const JobSpec j = fp8_job(Fp8Scaling::delayed, false);
  const std::vector<Op> sp = ops_for(j, 2, true);
  // Column-parallel (qkv, fc1): the input is all-gathered after its cast, s*h/t elements; the
  // output gradient is this rank's [s, N/t].
  CHECK(test::find_op(sp, "fp8_cast.qkv")->bytes == Approx(s * h / t * 4));
  CHECK(test::find_op(sp, "fp8_cast.qkv.bwd")->bytes == Approx(s * 3 * h / t * 4));
  // Row-parallel (proj, fc2): the input is local [s, K/t]; the output gradient is gathered, cast on s*h/t.
  CHECK(test::find_op(sp, "fp8_cast.fc2")->bytes == Approx(s * f / t * 4));
  CHECK(test::find_op(sp, "fp8_cast.fc2.bwd")->bytes == Approx(s * h / t * 4));
  // Without SP the replicated input is cast whole on every rank.
  CHECK(test::find_op(ops_for(j, 2, false), "fp8_cast.qkv")->bytes == Approx(s * h * 4));
}

TEST_CASE("fp8: weights cast once per iteration join the optimizer step's memory pass") {
  const ClusterSpec c = load_cluster("dgx-h100-superpod");
  const EfficiencyProfile prof = load_profile("h100-megatron");
  const PlanSpec p = test::PlanBuilder(1, 1, 8).batches(1, 4);
  JobSpec bf16;
  bf16.global_batch = 32;
  JobSpec fp8 = fp8_job(Fp8Scaling::delayed, false);
  fp8.global_batch = 32;
  const double opt_bf16 = iteration_costs(kModel, c, bf16, p, prof).optimizer_s[0];
  const double opt_fp8 = iteration_costs(kModel, c, fp8, p, prof).optimizer_s[0];
  // The step moves kOptimizerBytesPerParam per parameter; the cast adds (2 + 2) per layer weight.
  const double params = stage_params_per_rank(kModel, p, 0);
  const double cast = 2 * layer_params_per_rank(kModel, 1) * 4;
  CHECK(opt_fp8 / opt_bf16 == Approx((params * kOptimizerBytesPerParam + cast) / (params * kOptimizerBytesPerParam)));
  // Cast per micro-batch instead: nothing added to the step.
  fp8.fp8.weight_cast_per_micro_batch = true;
  CHECK(iteration_costs(kModel, c, fp8, p, prof).optimizer_s[0] == Approx(opt_bf16));
}

TEST_CASE("fp8: stacks carry their recipe; a bad one names the field") {
  auto job = [](nlohmann::json j) {
    JsonObjectReader r(j, "job.json");
    return read_job(r);
  };
  CHECK(job({{"global_batch", 8}, {"framework", "torchtitan"}}).fp8.scaling == Fp8Scaling::current);
  CHECK(job({{"global_batch", 8}, {"framework", "torchtitan"}}).fp8.weight_cast_per_micro_batch);
  CHECK(job({{"global_batch", 8}, {"framework", "megatron-core"}}).fp8.scaling == Fp8Scaling::delayed);
  CHECK_FALSE(job({{"global_batch", 8}, {"framework", "megatron-core"}}).fp8.weight_cast_per_micro_batch);
  nlohmann::json st = {{"name", "s"}, {"source", "x"}, {"attention", "fused"},
                       {"fp8", {{"scaling", "tensorwise"}, {"weight_cast", "per_iteration"}, {"source", "y"}}}};
  JsonObjectReader r(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(r), Catch::Contains("$.fp8.scaling"));
}

TEST_CASE("a stack's loss and selective-recompute entries: bad values name their field") {
  nlohmann::json st = {{"name", "s"}, {"source", "x"}, {"attention", "fused"},
                       {"selective_recompute", {{"policy", "every_other"}, {"source", "y"}}}};
  JsonObjectReader r(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(r), Catch::Contains("$.selective_recompute.policy"));
  st.erase("selective_recompute");
  st["loss"] = {{"bytes_per_logit", 1}, {"source", "y"}};  // below a 16-bit logit's own 2 bytes
  JsonObjectReader l(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(l), Catch::Contains("$.loss.bytes_per_logit"));
  st["loss"] = {{"bytes_per_logit", 4}, {"source", ""}};
  JsonObjectReader s(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(s), Catch::Contains("$.loss.source"));
}

TEST_CASE("a stack's pipeline entry: TorchTitan's, and bad values name their field") {
  const StackPipeline tt = load_stack("torchtitan").pipeline;
  CHECK(tt.sharded_stages);
  CHECK(tt.micro_batches_default_pp);
  const StackPipeline ds = load_stack("deepspeed").pipeline;
  CHECK_FALSE(ds.sharded_stages);  // refuses ZeRO-2/3 with pp
  CHECK(ds.sequential_p2p);        // blocking, paired transfers
  CHECK_FALSE(load_stack("megatron-core").pipeline.sequential_p2p);
  nlohmann::json st = {{"name", "s"}, {"source", "x"}, {"attention", "fused"},
                       {"pipeline", {{"sharded_stages", "sometimes"}, {"source", "y"}}}};
  JsonObjectReader r(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(r), Catch::Contains("$.pipeline.sharded_stages"));
  st["pipeline"] = {{"default_micro_batches", "pp"}, {"source", ""}};
  JsonObjectReader s(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(s), Catch::Contains("$.pipeline.source"));
  st["pipeline"] = {{"p2p", "overlapped"}, {"source", "y"}};
  JsonObjectReader q(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(q), Catch::Contains("$.pipeline.p2p"));
  st["pipeline"] = {{"default_micro_batches", "pp"}, {"source", "y"}, {"depth", 2}};
  JsonObjectReader u(st, "stack.json");
  CHECK_THROWS_WITH(read_stack(u), Catch::Contains("depth"));
}
