#pragma once
// Shared by the simulator tests: a real plan (preset model and cluster) resolved into specs.
#include <string>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::test {

struct RealPlan {
  ModelSpec model;
  ClusterSpec cluster;
  JobSpec job;
  PlanSpec plan;
  EfficiencyProfile profile;
};

// GPT-3 175B on the A100 superpod: tp 8, the given pp / vpp / schedule, global batch so that
// m = num_micro_batches with dp = 1 and micro-batch 1.
inline RealPlan gpt3_plan(Schedule s, int64_t pp, int64_t vpp, int64_t m, int64_t group = 0) {
  RealPlan r;
  r.model = load_model("gpt3-175b");
  r.cluster = load_cluster("dgx-a100-superpod");
  r.job.global_batch = m;
  r.plan.tp = 8;
  r.plan.pp = pp;
  r.plan.dp = 1;
  r.plan.vpp = vpp;
  r.plan.micro_batch = 1;
  r.plan.num_micro_batches = m;
  r.plan.schedule = s;
  r.plan.microbatch_group = group;
  r.plan.recompute = Recompute::full;
  r.profile = load_profile(r.cluster.profile);
  return r;
}

}  // namespace parallax::test
