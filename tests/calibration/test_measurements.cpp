// measurements.json as the executor writes it, and the bad ones calibration must refuse.
#include <catch2/catch.hpp>

#include "calibration_test_util.hpp"
#include "parallax/calibration/measurements.hpp"
#include "parallax/costmodel/ops.hpp"

using namespace parallax;
using nlohmann::json;

namespace {

json run_json(int64_t tp, int64_t dp) { return parallax::test::executor_run_json(tp, dp, 0.01); }

}  // namespace

TEST_CASE("measurements: a well-formed run reads with its plan, ranks and op classes") {
  const calib::Measurements m = calib::measurements_from_json(run_json(2, 1), "m.json");
  CHECK(m.world_size == 2);
  CHECK(m.plan.plan.tp == 2);
  CHECK(m.ranks.size() == 2);
  CHECK(m.ranks[1].tp_rank == 1);
  CHECK(m.ranks[0].ops[0].op_class == "gemm");
  CHECK(m.mean_iteration_s() == Approx(0.1));  // the first (warm-up) step excluded
}

TEST_CASE("measurements: executor op names map onto the cost model's op classes") {
  CHECK(calib::executor_op_class("matmul_qkv_backward") == "gemm");
  CHECK(calib::executor_op_class("attention_recompute") == "attention");
  CHECK(calib::executor_op_class("attention_backward") == "attention.bwd");
  CHECK(calib::executor_op_class("ln_f_backward") == "norm.bwd");
  CHECK(calib::executor_op_class("gelu") == "activation");
  CHECK(calib::executor_op_class("bias_backward") == "residual.bwd");
  CHECK(calib::executor_op_class("crossentropy") == "cross_entropy");
  CHECK(calib::executor_op_class("adamw") == "optimizer");
  CHECK(calib::executor_op_class("something_else").empty());
  // Llama's and the fused kernel's ops, on the classes the cost model gives its own ops.
  CHECK(calib::executor_op_class("rope") == parallax::op_class_of("rope"));
  CHECK(calib::executor_op_class("rope_backward") == parallax::op_class_of("rope.bwd"));
  CHECK(calib::executor_op_class("swiglu_backward") == parallax::op_class_of("swiglu.bwd"));
  CHECK(calib::executor_op_class("flash_attention") == parallax::op_class_of("attn.flash"));
  CHECK(calib::executor_op_class("flash_attention_backward") ==
        parallax::op_class_of("attn.flash.bwd"));
}

TEST_CASE("measurements: a negative iteration time is refused") {
  json j = run_json(1, 1);
  j["iterations"][1]["time_s"] = -0.1;
  parallax::test::require_input_error([&] { calib::measurements_from_json(j, "m.json"); },
                                      "$.iterations[1].time_s", {"m.json", "positive", "-0.1"});
}

TEST_CASE("measurements: a negative op time is refused") {
  json j = run_json(1, 1);
  j["ranks"][0]["ops"][0]["total_s"] = -1.0;
  parallax::test::require_input_error([&] { calib::measurements_from_json(j, "m.json"); },
                                      "$.ranks[0].ops[0].total_s", {"m.json"});
}

TEST_CASE("measurements: a plan that does not match the run is refused") {
  json j = run_json(2, 1);
  j["plan"] = run_json(1, 1)["plan"];  // the run had 2 ranks, this plan needs 1
  parallax::test::require_input_error([&] { calib::measurements_from_json(j, "m.json"); },
                                      "$.world_size", {"2 ranks", "tp*pp*dp = 1", "does not match"});
  json k = run_json(2, 1);
  k["ranks"][1]["tp_rank"] = 5;
  parallax::test::require_input_error([&] { calib::measurements_from_json(k, "m.json"); },
                                      "$.ranks[1].tp_rank", {"m.json"});
}

TEST_CASE("measurements: a run without iterations is refused") {
  json j = run_json(1, 1);
  j["iterations"] = json::array();
  parallax::test::require_input_error([&] { calib::measurements_from_json(j, "m.json"); },
                                      "$.iterations", {"no iterations"});
}
