// Resolution of the job and plan flags into validated specs, shared by the CLI and the GUI.
#include "parallax/inputs/job_flags.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "parallax/core/error.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/topologies/cluster_size.hpp"

namespace parallax {
namespace {

// Which flag sets each field validate_plan may complain about: a plan field's own (or, for a
// derived one, the flag it comes from), a job option's, or one of these.
std::string flag_for_path(const std::string& path) {
  if (path == "$.plan") return "--gpus";
  if (path == "$.model.moe.num_experts") return "--model";
  constexpr std::string_view kPlan = "$.plan.", kJob = "$.job.";
  if (path.rfind(kPlan, 0) == 0) {
    if (const PlanField* f = plan_field(std::string_view(path).substr(kPlan.size()))) return f->flag;
  }
  if (path.rfind(kJob, 0) == 0) {
    const JobField* f = job_field(std::string_view(path).substr(kJob.size()));
    if (f != nullptr && f->flag != nullptr) return f->flag;
  }
  for (const JobOption& j : job_options())
    if (j.json_path != nullptr && path == j.json_path) return j.flag;
  return path;
}

// The plan as the flags give it, as a plan file writes it: each field that has a flag, parsed
// by its rule (an integer flag takes the field's "absent" value too: etp 0 = tp), and left out
// where a file would leave it out; dp from the GPUs.
int64_t parse_field(const PlanField& f, const std::string& text) {
  return parse_int(f.flag, text, std::min(f.min, f.absent), f.max);
}

nlohmann::json plan_json(const PlanOptions& o, int64_t gpus) {
  const int64_t tp = parse_field(*plan_field("tp"), o.value("tp"));
  const int64_t pp = parse_field(*plan_field("pp"), o.value("pp"));
  const int64_t cp = parse_field(*plan_field("cp"), o.value("cp"));
  if (gpus % (tp * cp * pp) != 0) {
    const std::string product = cp > 1 ? "tp * cp * pp = " : "tp * pp = ";
    throw InputError("command line", "--gpus",
                     "must be divisible by " + product + std::to_string(tp * cp * pp) + " (got " +
                         std::to_string(gpus) + ")");
  }
  nlohmann::json plan = {{"dp", gpus / (tp * cp * pp)}};
  const std::span<const PlanField> fields = plan_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const PlanField& f = fields[i];
    const std::string& text = o.plan.at(i);
    if (f.derived) continue;
    switch (f.type) {
      case FieldType::integer: {
        const int64_t v = parse_field(f, text);
        if (written(f, v)) plan[f.key] = v;
        break;
      }
      case FieldType::on_off:
        if (text == "true") plan[f.key] = true;
        break;
      case FieldType::name:  // empty: absent where the flag has no default (--schedule)
        if ((!text.empty() || f.flag_default[0] != '\0') && (f.always_written || text != f.omitted_spelling))
          plan[f.key] = text;
        break;
    }
  }
  return plan;
}

// The job as the flags give it, as a job file writes it: each field that has a flag and is given
// (a required one always), parsed by its rule; the stack as resolved.
nlohmann::json job_json(const PlanOptions& o, const std::string& stack) {
  nlohmann::json job = {{"framework", stack}};
  const std::span<const JobField> fields = job_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const JobField& f = fields[i];
    const std::string& text = o.job.at(i);
    if (f.flag == nullptr || job.contains(f.key) || (text.empty() && !f.required)) continue;
    if (f.type == JobFieldType::integer || f.integer_flag)
      job[f.key] = parse_int(f.flag, text, static_cast<int64_t>(f.min), static_cast<int64_t>(f.max));
    else if (f.type == JobFieldType::number)
      job[f.key] = parse_number(f.flag, text, f.min, f.max);
    else
      job[f.key] = text;
  }
  // A kernel the job names is a preset or a file: one that cannot be loaded is the flag's error.
  if (job.contains("attention_kernel")) {
    try {
      (void)load_attention_kernel(job["attention_kernel"].get<std::string>());
    } catch (const InputError& e) {
      throw InputError("command line", "--attention-kernel", e.rule());
    }
  }
  return job;
}

// A job field's option: the field's flag, help and default.
JobOption field_option(const char* key) {
  const JobField& f = *job_field(key);
  return {.flag = f.flag, .alias = f.alias, .help = f.help, .show_default = f.flag_default[0] != '\0',
          .json_path = nullptr, .job_key = f.key};
}

// An input of the job that is no field of it.
JobOption input_option(std::string PlanOptions::*input, const char* flag, const char* help, bool show_default,
                       const char* json_path = nullptr) {
  return {.flag = flag, .alias = nullptr, .help = help, .show_default = show_default, .json_path = json_path,
          .input = input};
}

}  // namespace

std::span<const JobOption> job_options() {
  static const std::vector<JobOption> options = {
      input_option(&PlanOptions::model, "--model", "model preset name or JSON file", true),
      input_option(&PlanOptions::cluster, "--cluster", "cluster preset name or JSON file", true),
      input_option(&PlanOptions::nodes, "--nodes",
                   "the cluster at this many nodes (up to what its fabric joins; default: its own)", false),
      input_option(&PlanOptions::gpus, "--gpus", "GPUs used (tp * cp * pp * dp)", true, "$.gpus"),
      field_option("global_batch"),
      input_option(&PlanOptions::seq_len, "--seq-len", "tokens per sequence (default: the model's)", false),
      field_option("dtype"),
      field_option("bytes_per_param"),
      field_option("framework"),
      field_option("attention_kernel"),
      field_option("attention"),
      field_option("tokens"),
      field_option("price_per_gpu_hour_usd"),
      input_option(&PlanOptions::profile, "--profile",
                   "efficiency profile preset or JSON file (default: the cluster's)", false),
  };
  return options;
}

std::string& JobOption::text(PlanOptions& o) const { return input != nullptr ? o.*input : o.job_value(job_key); }

std::vector<std::string> default_plan_values() {
  std::vector<std::string> values;
  for (const PlanField& f : plan_fields()) values.emplace_back(f.flag_default);
  return values;
}

std::vector<std::string> default_job_values() {
  std::vector<std::string> values;
  for (const JobField& f : job_fields()) values.emplace_back(f.flag_default);
  return values;
}

std::string& PlanOptions::value(std::string_view key) { return plan.at(plan_field_index(key)); }

const std::string& PlanOptions::value(std::string_view key) const { return plan.at(plan_field_index(key)); }

std::string& PlanOptions::job_value(std::string_view key) { return job.at(job_field_index(key)); }

const std::string& PlanOptions::job_value(std::string_view key) const { return job.at(job_field_index(key)); }

ResolvedJob resolve_job(const PlanOptions& o) { return resolve_job(o, load_model(o.model)); }

ResolvedJob resolve_job(const PlanOptions& o, const ModelSpec& model) {
  ResolvedJob r;
  r.model = model;
  if (!o.seq_len.empty()) r.model.seq_len = parse_int("--seq-len", o.seq_len, 1, Limits::max_seq_len);
  r.cluster = load_cluster(o.cluster);
  if (!o.nodes.empty()) {
    const int64_t nodes = parse_int("--nodes", o.nodes, 1, Limits::max_gpus);
    r.cluster = with_nodes(r.cluster, nodes, "command line", "--nodes").cluster;
  }
  r.gpus = o.gpus.empty() ? r.cluster.total_gpus() : parse_int("--gpus", o.gpus, 1, Limits::max_gpus);
  if (r.gpus > r.cluster.total_gpus()) {
    throw InputError("command line", "--gpus",
                     "cluster " + r.cluster.name + " has " + std::to_string(r.cluster.total_gpus()) +
                         " GPUs (got " + std::to_string(r.gpus) + ")");
  }
  // NVLink domains of several hosts: the job's segments of them (SLURM --segment).
  ClusterSpec segmented = with_job_segments(r.cluster, r.gpus, "command line", "--gpus");
  if (segmented.name != r.cluster.name) r.whole_cluster = std::exchange(r.cluster, std::move(segmented));
  // The profile first: the stack defaults to the profile's own (cpu-local has only the executor's).
  r.profile = load_profile(o.profile.empty() ? r.cluster.profile : o.profile);
  const std::string& framework = o.job_value("framework");
  // The job goes through the same strict JSON reader as files do.
  nlohmann::json job = job_json(o, framework.empty() ? r.profile.default_stack() : framework);
  try {
    JsonObjectReader jr(job, "command line", "$.job");
    r.job = read_job(jr);
    if (r.cluster.gpu.peak(r.job.dtype) <= 0) {
      throw InputError("command line", "$.job.dtype",
                       "GPU " + r.cluster.gpu.name + " has no " + to_string(r.job.dtype) + " math");
    }
  } catch (const InputError& e) {
    if (e.source() != "command line") throw;
    throw InputError("command line", flag_for_path(e.path()), e.rule());
  }
  try {
    r.profile.framework(r.job.framework);  // unknown stack is an input error now, not later
  } catch (const InputError& e) {
    throw InputError("command line", "--stack", e.rule());
  }
  return r;
}

Resolved resolve(const PlanOptions& o) {
  // Without a global batch the job is read with one sequence, then given micro_batch * dp.
  PlanOptions job_options = o;
  const bool batch_given = !o.job_value("global_batch").empty();
  if (!batch_given) job_options.job_value("global_batch") = "1";
  const ResolvedJob rj = resolve_job(job_options);
  Resolved r;
  PlanFile& f = r.file;
  f.model = rj.model;
  f.cluster = rj.cluster;
  f.gpus = rj.gpus;
  f.job = rj.job;
  r.profile = rj.profile;

  nlohmann::json plan = plan_json(o, f.gpus);
  if (!batch_given)
    f.job.global_batch = plan["micro_batch"].get<int64_t>() * plan["dp"].get<int64_t>();
  try {
    JsonObjectReader pr(plan, "command line", "$.plan");
    f.plan = read_plan(pr);
    if (f.plan.num_micro_batches == 0 && f.plan.micro_batch * f.plan.dp > 0 &&
        f.job.global_batch % (f.plan.micro_batch * f.plan.dp) == 0) {
      f.plan.num_micro_batches = f.job.global_batch / (f.plan.micro_batch * f.plan.dp);
    }
    validate_plan(f.model, f.cluster, f.job, f.plan, f.gpus, "command line");
  } catch (const InputError& e) {
    if (e.source() != "command line") throw;
    throw InputError("command line", flag_for_path(e.path()), e.rule());
  }
  return r;
}

}  // namespace parallax
