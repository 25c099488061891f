#include "parallax/core/plan_file.hpp"

#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {

using nlohmann::json;

json to_json(const PlanFile& f) {
  return {{"parallax_plan_version", kPlanFileVersion},
          {"model", to_json(f.model)},
          {"cluster", to_json(f.cluster)},  // the GPU goes inline: a plan file stands alone
          {"gpus", f.gpus},
          {"job", to_json(f.job)},
          {"plan", to_json(f.plan)}};
}

json to_json(const PlanFile& f, const PlanExpectation& e) {
  json j = to_json(f);
  j["expected"] = {{"iteration_time_s", e.iteration_time_s},
                   {"interval", {{"level", e.level}, {"iteration_time_s", {e.low_s, e.high_s}}, {"basis", e.basis}}}};
  return j;
}

namespace {

// The "expected" block, checked and left (plan_file.hpp).
void check_expectation(JsonObjectReader& r) {
  JsonObjectReader e = r.object("expected");
  const double t = e.get_number("iteration_time_s", 1e-12, 1e12);
  JsonObjectReader iv = e.object("interval");
  iv.get_number("level", 1e-6, 1 - 1e-6);
  const json& ends = iv.array("iteration_time_s");
  if (ends.size() != 2 || !ends[0].is_number() || !ends[1].is_number() || !(ends[0].get<double>() > 0) ||
      !(ends[0].get<double>() <= t) || !(t <= ends[1].get<double>()) || !std::isfinite(ends[1].get<double>()))
    iv.fail("iteration_time_s", "must be [low, high] with 0 < low <= the expected time <= high");
  iv.ignore("basis");
  iv.finish();
  e.finish();
}

}  // namespace

PlanFile read_plan_file(const json& j, const std::string& source) {
  JsonObjectReader r(j, source);
  for (const char* key : {"parallax_plan_version", "model", "cluster", "gpus", "job", "plan", "expected"})
    r.ignore(key);
  r.finish();
  // The version comes first: a newer file may legitimately fail every rule below.
  const int64_t version = r.get_int("parallax_plan_version", 0, 1 << 30);
  if (version != kPlanFileVersion)
    r.fail("parallax_plan_version", "must be " + std::to_string(kPlanFileVersion) + " (got " +
                                        std::to_string(version) +
                                        "; written by another Parallax version?)");
  PlanFile f;
  JsonObjectReader model = r.object("model");
  f.model = read_model(model);
  JsonObjectReader cluster = r.object("cluster");
  f.cluster = read_cluster(cluster);
  f.gpus = r.get_int("gpus", 1, Limits::max_gpus);
  JsonObjectReader job = r.object("job");
  f.job = read_job(job);
  JsonObjectReader plan = r.object("plan");
  f.plan = read_plan(plan);
  // Absent num_micro_batches is derived; when the batch does not divide, validate_plan says why.
  const int64_t per_micro_step = f.plan.micro_batch * f.plan.dp;
  if (f.plan.num_micro_batches == 0 && f.job.global_batch % per_micro_step == 0)
    f.plan.num_micro_batches = f.job.global_batch / per_micro_step;
  validate_plan(f.model, f.cluster, f.job, f.plan, f.gpus, source);
  if (r.has("expected")) check_expectation(r);
  return f;
}

}  // namespace parallax
