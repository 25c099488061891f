#include "parallax/core/plan_file.hpp"

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

PlanFile read_plan_file(const json& j, const std::string& source, MoeReader reader) {
  JsonObjectReader r(j, source);
  for (const char* key : {"parallax_plan_version", "model", "cluster", "gpus", "job", "plan"})
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
  validate_plan(f.model, f.cluster, f.job, f.plan, f.gpus, source, reader);
  return f;
}

}  // namespace parallax
