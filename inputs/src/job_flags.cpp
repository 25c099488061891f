// Resolution of the job and plan flags into validated specs, shared by the CLI and the GUI.
#include "parallax/inputs/job_flags.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "parallax/core/error.hpp"
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
  constexpr std::string_view kPlan = "$.plan.";
  if (path.rfind(kPlan, 0) == 0) {
    if (const PlanField* f = plan_field(std::string_view(path).substr(kPlan.size()))) return f->flag;
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

}  // namespace

std::span<const JobOption> job_options() {
  static const JobOption options[] = {
      {&PlanOptions::model, "--model", nullptr, "model preset name or JSON file", true, nullptr},
      {&PlanOptions::cluster, "--cluster", nullptr, "cluster preset name or JSON file", true, nullptr},
      {&PlanOptions::nodes, "--nodes", nullptr,
       "the cluster at this many nodes (up to what its fabric joins; default: its own)", false, nullptr},
      {&PlanOptions::gpus, "--gpus", nullptr, "GPUs used (tp * cp * pp * dp)", true, "$.gpus"},
      {&PlanOptions::global_batch, "--global-batch", nullptr, "sequences per iteration", true,
       "$.job.global_batch"},
      {&PlanOptions::seq_len, "--seq-len", nullptr, "tokens per sequence (default: the model's)", false, nullptr},
      {&PlanOptions::dtype, "--dtype", nullptr, "training dtype: fp32|tf32|bf16|fp16|fp8", true, "$.job.dtype"},
      {&PlanOptions::bytes_per_param, "--bytes-per-param", nullptr,
       "weights+grads+optimizer bytes per parameter: 16|18|20", true, "$.job.bytes_per_param"},
      {&PlanOptions::framework, "--stack", "--framework",
       "software stack: presets/stacks/ says how it computes attention, the profile holds its scale "
       "(default: the profile's, megatron-lm on the GPU profiles)",
       false, "$.job.framework"},
      {&PlanOptions::attention_kernel, "--attention-kernel", nullptr,
       "fused attention kernel (presets/attention/: flash-attention-2, flash-attention-3, cudnn, "
       "triton-flash) or JSON file; default: the stack's for the GPU",
       false, nullptr},
      {&PlanOptions::attention, "--attention", nullptr,
       "the attention core, overriding the stack's: fused (blocked, no s x s scores; the executor's CPU "
       "backend runs its own blocked kernel) or unfused",
       false, "$.job.attention"},
      {&PlanOptions::tokens, "--tokens", nullptr, "total training tokens", false, "$.job.tokens"},
      {&PlanOptions::price, "--price", nullptr, "price per GPU-hour (USD)", false, "$.job.price_per_gpu_hour_usd"},
      {&PlanOptions::profile, "--profile", nullptr, "efficiency profile preset or JSON file (default: the cluster's)",
       false, nullptr},
  };
  return options;
}

std::vector<std::string> default_plan_values() {
  std::vector<std::string> values;
  for (const PlanField& f : plan_fields()) values.emplace_back(f.flag_default);
  return values;
}

std::string& PlanOptions::value(std::string_view key) { return plan.at(plan_field_index(key)); }

const std::string& PlanOptions::value(std::string_view key) const { return plan.at(plan_field_index(key)); }

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
  const std::string stack = o.framework.empty() ? r.profile.default_stack() : o.framework;
  // The job goes through the same strict JSON reader as files do.
  nlohmann::json job = {{"global_batch", parse_int("--global-batch", o.global_batch, 1,
                                                   Limits::max_global_batch)},
                        {"dtype", o.dtype},
                        {"bytes_per_param", parse_int("--bytes-per-param", o.bytes_per_param, 1, 64)},
                        {"framework", stack}};
  if (!o.attention_kernel.empty()) {
    try {
      (void)load_attention_kernel(o.attention_kernel);
    } catch (const InputError& e) {
      throw InputError("command line", "--attention-kernel", e.rule());
    }
    job["attention_kernel"] = o.attention_kernel;
  }
  if (!o.attention.empty()) job["attention"] = o.attention;
  if (!o.tokens.empty()) job["tokens"] = parse_number("--tokens", o.tokens, 0, Limits::max_tokens);
  if (!o.price.empty()) job["price_per_gpu_hour_usd"] = parse_number("--price", o.price, 0, 1e6);
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
  if (o.global_batch.empty()) job_options.global_batch = "1";
  const ResolvedJob rj = resolve_job(job_options);
  Resolved r;
  PlanFile& f = r.file;
  f.model = rj.model;
  f.cluster = rj.cluster;
  f.gpus = rj.gpus;
  f.job = rj.job;
  r.profile = rj.profile;

  nlohmann::json plan = plan_json(o, f.gpus);
  if (o.global_batch.empty())
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
