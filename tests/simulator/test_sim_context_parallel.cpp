// Context parallelism in the simulator: the K/V ring's exposed sends are events on a "cp ring"
// stream, each forward and backward step holds them, and the simulated iteration agrees with the
// analytic one as on plans without cp.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/iteration_costs.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/simulator/simulate.hpp"
#include "sim_test_util.hpp"

namespace parallax::test {

TEST_CASE("simulator: the cp ring's exposed sends are events and the time agrees with predict()",
          "[simulator][cp]") {
  // Llama 3.1 405B at 128K on 256 H100s: tp 8, cp 16 (the ring across nodes), pp 2 (63 layers
  // each), 16 micro-batches, on Megatron-Core.
  RealPlan r;
  r.model = load_model("llama3.1-405b");
  r.cluster = load_cluster("dgx-h100-superpod");  // 127 nodes
  r.job.global_batch = 16;
  r.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), r.job);
  r.plan.tp = 8;
  r.plan.cp = 16;
  r.plan.pp = 2;
  r.plan.dp = 1;
  r.plan.micro_batch = 1;
  r.plan.num_micro_batches = 16;
  r.plan.sequence_parallel = true;
  r.plan.recompute = Recompute::full;
  r.profile = load_profile(r.cluster.profile);
  // A slow ring (a send/recv fit of 2 GB/s between nodes) so that the ring shows: what the
  // attention blocks do not hide is on the critical path.
  r.profile.communication.push_back({Collective::send_recv, true, 2, 20e-6, 2e9, "test"});
  const IterationCosts ic = iteration_costs(r.model, r.cluster, r.job, r.plan, r.profile);
  REQUIRE(ic.stages[1].cp_forward_s > 0);
  REQUIRE(ic.stages[1].cp_backward_s > 0);

  const SimInputs in = make_sim_inputs(r.model, r.cluster, r.job, r.plan, r.profile);
  const SimResult sim = simulate(in, SimOptions{true, false});
  int forward = 0, backward = 0;
  double bytes = 0;
  for (const SimOp& op : sim.ops) {
    if (op.stream != SimStream::cp) continue;
    forward += op.kind == SimOpKind::cp_forward;
    backward += op.kind == SimOpKind::cp_backward;
    bytes += op.bytes;
    if (op.rank == 1 && op.kind == SimOpKind::cp_forward)
      CHECK(op.duration_s == Approx(ic.stages[1].cp_forward_s));
  }
  // One forward and one backward event per stage and micro-batch.
  CHECK(forward == 2 * 16);
  CHECK(backward == 2 * 16);
  // Bytes each rank sends: per layer (cp - 1) steps of K and V of its s / cp tokens and its
  // kv_heads / tp heads (8 / 8 = 1 of 128), bf16; backward twice that plus the recomputed forward.
  const double kv_step = 2 * 131072.0 / 16 * 1 * 128 * 2;
  CHECK(bytes == Approx(126 * 16 * 15 * kv_step * (1 + 2 + 1)));

  const Prediction pr = predict(r.model, r.cluster, r.job, r.plan, r.profile);
  CHECK(pr.time.cp_comm_s > 0);
  const double diff = (sim.iteration_time_s - pr.iteration_time_s) / pr.iteration_time_s;
  INFO("simulated " << sim.iteration_time_s << " s, analytic " << pr.iteration_time_s << " s");
  CHECK(std::fabs(diff) <= 0.02);
}

}  // namespace parallax::test
