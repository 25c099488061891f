// Resolution of the job and plan flags into validated specs, shared by the CLI and the GUI.
#include "parallax/inputs/job_flags.hpp"

#include <map>
#include <utility>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/topologies/cluster_size.hpp"

namespace parallax {
namespace {

// Which flag sets each field validate_plan may complain about.
std::string flag_for_path(const std::string& path) {
  static const std::map<std::string, std::string> table = {
      {"$.gpus", "--gpus"},
      {"$.plan", "--gpus"},
      {"$.plan.tp", "--tp"},
      {"$.plan.pp", "--pp"},
      {"$.plan.cp", "--cp"},
      {"$.plan.ep", "--ep"},
      {"$.plan.etp", "--etp"},
      {"$.plan.moe_dispatcher", "--moe-dispatcher"},
      {"$.plan.dp", "--gpus"},
      {"$.plan.vpp", "--vpp"},
      {"$.plan.microbatch_group", "--microbatch-group"},
      {"$.plan.micro_batch", "--mbs"},
      {"$.plan.num_micro_batches", "--global-batch"},
      {"$.plan.sequence_parallel", "--sp"},
      {"$.plan.recompute", "--recompute"},
      {"$.plan.recompute_layers", "--recompute-layers"},
      {"$.plan.zero", "--zero"},
      {"$.plan.first_stage_layers", "--first-stage-layers"},
      {"$.plan.last_stage_layers", "--last-stage-layers"},
      {"$.plan.account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split"},
      {"$.plan.account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split"},
      {"$.plan.schedule", "--schedule"},
      {"$.plan.order", "--order"},
      {"$.job.global_batch", "--global-batch"},
      {"$.model.moe.num_experts", "--model"},
      {"$.job.dtype", "--dtype"},
      {"$.job.bytes_per_param", "--bytes-per-param"},
      {"$.job.framework", "--stack"},
      {"$.job.attention", "--attention"},
      {"$.job.tokens", "--tokens"},
      {"$.job.price_per_gpu_hour_usd", "--price"},
  };
  auto it = table.find(path);
  return it == table.end() ? path : it->second;
}

}  // namespace

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

  const int64_t tp = parse_int("--tp", o.tp, 1, Limits::max_gpus);
  const int64_t pp = parse_int("--pp", o.pp, 1, Limits::max_gpus);
  const int64_t cp = parse_int("--cp", o.cp, 1, Limits::max_gpus);
  if (f.gpus % (tp * cp * pp) != 0) {
    const std::string product = cp > 1 ? "tp * cp * pp = " : "tp * pp = ";
    throw InputError("command line", "--gpus",
                     "must be divisible by " + product + std::to_string(tp * cp * pp) + " (got " +
                         std::to_string(f.gpus) + ")");
  }
  nlohmann::json plan = {{"tp", tp},
                         {"cp", cp},
                         {"pp", pp},
                         {"dp", f.gpus / (tp * cp * pp)},
                         {"ep", parse_int("--ep", o.ep, 1, Limits::max_gpus)},
                         {"vpp", parse_int("--vpp", o.vpp, 1, Limits::max_layers)},
                         {"micro_batch", parse_int("--mbs", o.mbs, 1, Limits::max_global_batch)},
                         {"sequence_parallel", o.sp},
                         {"recompute", o.recompute},
                         {"recompute_layers",
                          parse_int("--recompute-layers", o.recompute_layers, 0, Limits::max_layers)},
                         {"zero", parse_int("--zero", o.zero, 0, 3)},
                         {"first_stage_layers", parse_int("--first-stage-layers", o.first_stage_layers,
                                                          0, Limits::max_layers)},
                         {"last_stage_layers", parse_int("--last-stage-layers", o.last_stage_layers,
                                                         0, Limits::max_layers)},
                         {"order", o.order}};
  if (!o.schedule.empty()) plan["schedule"] = o.schedule;
  // Left out when off, as plan files leave them out.
  if (o.embedding_in_split) plan["account_for_embedding_in_pipeline_split"] = true;
  if (o.loss_in_split) plan["account_for_loss_in_pipeline_split"] = true;
  // alltoall, the default, is left out, as plan files leave it out.
  if (o.moe_dispatcher != "alltoall") plan["moe_dispatcher"] = o.moe_dispatcher;
  // 0, the default, means tp (Megatron-Core's): left out, as plan files leave it out.
  if (const int64_t etp = parse_int("--etp", o.etp, 0, Limits::max_gpus); etp > 0) plan["etp"] = etp;
  // 0, the default, means pp: left out, as plan files leave it out.
  if (const int64_t g = parse_int("--microbatch-group", o.microbatch_group, 0, Limits::max_global_batch); g > 0)
    plan["microbatch_group"] = g;
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
