#include "parallax/costmodel/validation.hpp"

#include <cmath>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// A row's fields, strictly: unknown keys and impossible plans are errors naming the row.
PublishedRun read_run(const nlohmann::json& row, const std::string& source, size_t index) {
  const std::string path = "$.runs[" + std::to_string(index) + "]";
  JsonObjectReader r(row, source, path);
  PublishedRun in;
  in.id = r.get_string("id");
  r.get_string("source");
  r.ignore("notes");
  {
    JsonObjectReader mr = r.object("model");
    in.model = read_model(mr);
    in.model.name = in.id;
  }
  const std::string gpu_name = r.get_string("gpu");
  in.cluster = load_cluster(r.get_string("cluster"));
  if (in.cluster.gpu.name != gpu_name) {
    r.fail("gpu", "cluster " + in.cluster.name + " has GPU " + in.cluster.gpu.name + ", not " +
                      gpu_name);
  }
  in.gpus = r.get_int("gpus", 1, Limits::max_gpus);
  // The rows do not name a dtype: A100-era runs trained in bf16; V100 has no bf16, so fp16.
  in.job.dtype = in.cluster.gpu.peak(Dtype::bf16) > 0 ? Dtype::bf16 : Dtype::fp16;
  in.job.global_batch = r.get_int("global_batch", 1, Limits::max_global_batch);
  in.job.framework = r.get_string_or("framework", "megatron-lm");
  {
    JsonObjectReader pr = r.object("plan");
    in.plan.tp = pr.get_int("tp", 1, Limits::max_gpus);
    in.plan.pp = pr.get_int("pp", 1, Limits::max_gpus);
    in.plan.dp = pr.get_int("dp", 1, Limits::max_gpus);
    in.plan.micro_batch = pr.get_int("micro_batch", 1, Limits::max_global_batch);
    const std::string rc = pr.get_enum("recompute", {"none", "selective", "full"});
    in.plan.recompute = rc == "none" ? Recompute::none
                        : rc == "selective" ? Recompute::selective : Recompute::full;
    in.schedule_text = pr.get_string("schedule");
    pr.finish();
  }
  in.plan.schedule = in.schedule_text == "gpipe" ? Schedule::gpipe : Schedule::one_f_one_b;
  if (in.job.global_batch % (in.plan.micro_batch * in.plan.dp) == 0) {
    in.plan.num_micro_batches = in.job.global_batch / (in.plan.micro_batch * in.plan.dp);
  }
  {
    JsonObjectReader mr = r.object("measured");
    in.measured_tflops_per_gpu = mr.get_number("tflops_per_gpu", 1e-3, 1e6);
    in.measured_iteration_time_s = mr.get_number_or("iteration_time_s", 1e-9, 1e9, 0);
    in.convention = mr.get_enum("convention", {"megatron_hw", "model_mfu"});
    mr.finish();
  }
  r.finish();
  validate_plan(in.model, in.cluster, in.job, in.plan, in.gpus, source + " " + path);
  return in;
}

ValidationRow validate_row(const PublishedRun& in,
                           const std::optional<EfficiencyProfile>& profile_override) {
  ValidationRow out;
  out.id = in.id;
  out.framework = in.job.framework;
  out.convention = in.convention;
  out.measured_tflops_per_gpu = in.measured_tflops_per_gpu;
  out.measured_iteration_time_s = in.measured_iteration_time_s;
  const EfficiencyProfile prof =
      profile_override ? *profile_override : load_profile(in.cluster.profile);
  bool first = true;
  Prediction best;
  for (const PlanSpec& cand : schedule_candidates(in)) {
    Prediction pr = predict(in.model, in.cluster, in.job, cand, prof);
    if (first || pr.iteration_time_s < best.iteration_time_s) {
      best = pr;
      out.plan = cand;
      first = false;
    }
  }
  if (starts_with(in.schedule_text, "unpublished")) {
    out.filled = std::string("schedule unpublished: chose ") + to_string(out.plan.schedule) +
                 (out.plan.vpp > 1 ? " vpp=" + std::to_string(out.plan.vpp) : "") +
                 " (fastest predicted)";
  }
  out.predicted_iteration_time_s = best.iteration_time_s;
  out.predicted_tflops_per_gpu = out.convention == "megatron_hw" ? best.megatron_tflops_per_gpu
                                                                 : best.model_tflops_per_gpu;
  out.error_pct = (out.predicted_tflops_per_gpu - out.measured_tflops_per_gpu) /
                  out.measured_tflops_per_gpu * 100;
  out.fits = best.fits;
  out.model = in.model;
  out.cluster = in.cluster;
  out.job = in.job;
  out.profile = prof;
  return out;
}

}  // namespace

// The candidates for a row's schedule: the published one, or, where the source left it
// unpublished, every schedule Megatron-LM could have run for this shape (the rows' rule).
std::vector<PlanSpec> schedule_candidates(const PublishedRun& in) {
  PlanSpec base = in.plan;
  std::vector<PlanSpec> out;
  const std::string& s = in.schedule_text;
  if (s == "none" || s == "1f1b" || (starts_with(s, "unpublished") && base.pp == 1)) {
    base.schedule = Schedule::one_f_one_b;
    out.push_back(base);
    return out;
  }
  if (s == "gpipe") {
    base.schedule = Schedule::gpipe;
    out.push_back(base);
    return out;
  }
  base.schedule = Schedule::one_f_one_b;
  out.push_back(base);
  if (starts_with(s, "unpublished") && base.num_micro_batches % base.pp == 0) {
    const int64_t per_stage = in.model.layers / base.pp;
    for (int64_t v = 2; v <= per_stage; ++v) {
      if (per_stage % v != 0) continue;
      PlanSpec c = base;
      c.vpp = v;
      c.schedule = Schedule::interleaved;
      out.push_back(c);
    }
  }
  return out;
}

std::vector<PublishedRun> read_published_runs(const nlohmann::json& runs,
                                              const std::string& source) {
  JsonObjectReader r(runs, source);
  r.ignore("about");
  r.ignore("conventions");
  r.ignore("rules");
  const nlohmann::json& rows = r.raw("runs");
  if (!rows.is_array() || rows.empty()) r.fail("runs", "must be a non-empty array of runs");
  r.finish();
  std::vector<PublishedRun> out;
  for (size_t i = 0; i < rows.size(); ++i) out.push_back(read_run(rows[i], source, i));
  return out;
}

ValidationReport validate_runs(const nlohmann::json& runs, const std::string& source,
                               const std::optional<EfficiencyProfile>& profile_override) {
  ValidationReport rep;
  double sum = 0;
  for (const PublishedRun& run : read_published_runs(runs, source)) {
    rep.rows.push_back(validate_row(run, profile_override));
    const double e = std::fabs(rep.rows.back().error_pct);
    sum += e;
    rep.max_abs_error_pct = std::max(rep.max_abs_error_pct, e);
  }
  rep.mean_abs_error_pct = sum / static_cast<double>(rep.rows.size());
  return rep;
}

}  // namespace parallax
