// A corpus row's job, plan and measurement (see corpus_row.hpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "corpus_row.hpp"
#include "parallax/core/attention_kernel_io.hpp"
#include "parallax/core/enum_names.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax::detail {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void read_recompute(JsonObjectReader& p, PublishedRun& run) {
  const nlohmann::json& v = p.raw("recompute");
  if (unpublished(v)) {
    run.free_recompute = true;
    return;
  }
  const std::string rc = p.get_enum("recompute", {"none", "selective", "full", "selective op",
                                                  "selective layer"});
  if (rc == "none") run.plan.recompute = Recompute::none;
  if (rc == "selective" || rc == "selective op") run.plan.recompute = Recompute::selective;
  if (rc == "full") run.plan.recompute = Recompute::full;
  if (rc == "selective layer") {
    // TorchTitan's layer-level selective checkpointing recomputes every second layer whole.
    run.plan.recompute = Recompute::full;
    run.plan.recompute_layers = std::max<int64_t>(1, run.model.layers / run.plan.pp / 2);
    run.assumed.push_back("recompute \"selective layer\": every second layer recomputed whole");
  }
}

// ZeRO stage from the published zero and fsdp fields.
void read_sharding(JsonObjectReader& p, PublishedRun& run, std::vector<std::string>& reasons) {
  const nlohmann::json& fs = p.raw("fsdp");
  if (!fs.is_string()) p.fail("fsdp", "must be a string (none, full_shard, shard_grad_op, ...)");
  const std::string fsdp = fs.get<std::string>();
  const nlohmann::json& z = p.raw("zero");
  if (z.is_number_integer()) {
    run.plan.zero = p.get_int("zero", 0, 3);
  } else if (!unpublished(z)) {
    p.fail("zero", "must be 0-3 or \"unpublished...\" (got " + z.dump() + ")");
  } else if (fsdp == "full_shard") {
    run.plan.zero = 3;
  } else if (fsdp == "shard_grad_op") {
    run.plan.zero = 2;
  } else if (fsdp == "none") {
    run.plan.zero = 1;
    run.assumed.push_back("zero unpublished: 1 (distributed optimizer, the fastest without "
                          "sharding parameters)");
  }
  if (fsdp != "none" && fsdp != "full_shard" && fsdp != "shard_grad_op") {
    add_reason(reasons, "fsdp " + fsdp.substr(0, fsdp.find(' ')));
  }
}

void read_schedule(JsonObjectReader& p, PublishedRun& run, std::vector<std::string>& reasons) {
  const auto vpp = int_or_unpublished(p, "vpp", true);
  run.plan.vpp = vpp.value_or(1);
  run.free_vpp = !vpp && run.plan.pp > 1;
  run.schedule_text = p.get_string("schedule");
  std::string s = run.schedule_text;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  run.plan.schedule = Schedule::one_f_one_b;
  if (starts_with(s, "gpipe")) run.plan.schedule = Schedule::gpipe;
  // A published vpp > 1 is the interleaved schedule, whether or not the schedule is named.
  if ((starts_with(s, "interleaved") || starts_with(s, "unpublished")) && run.plan.vpp > 1) {
    run.plan.schedule = Schedule::interleaved;
  }
  if (run.plan.vpp > 1 && run.plan.schedule != Schedule::interleaved) {
    add_reason(reasons, "vpp > 1 with schedule \"" + run.schedule_text + "\"");
  }
}

// Layers that do not divide over the stages: the first and last stage take one layer fewer
// (Megatron-LM's uneven split, as Llama 3 405B ran 126 layers on 16 stages).
void uneven_stages(PublishedRun& run, std::vector<std::string>& reasons) {
  const int64_t L = run.model.layers, pp = run.plan.pp;
  if (pp <= 1 || L % pp == 0) return;
  const int64_t per = (L + pp - 1) / pp, short_by = per * pp - L;
  if (pp < 3 || short_by > 2) {
    add_reason(reasons, "layers (" + std::to_string(L) + ") do not divide over pp " +
                            std::to_string(pp) + " and the split is unpublished");
    return;
  }
  run.plan.first_stage_layers = per - 1;
  run.plan.last_stage_layers = short_by == 2 ? per - 1 : per;
  run.assumed.push_back("uneven stages: first " + std::to_string(run.plan.first_stage_layers) +
                        ", last " + std::to_string(run.plan.last_stage_layers) + " layers");
}

// A row that names the interleaved schedule without its vpp: the stack's default virtual stages
// where it has one (TorchTitan), else the fill may choose only vpp > 1, and needs equal model
// chunks (Megatron-LM's rule).
void interleaved_split(PublishedRun& run, std::vector<std::string>& reasons) {
  std::string s = run.schedule_text;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!run.free_vpp || !starts_with(s, "interleaved")) return;
  run.interleaved_only = true;
  if (const int64_t v = run.job.pipeline.default_virtual_stages; v > 1) {
    run.plan.vpp = v;
    run.plan.schedule = Schedule::interleaved;
    run.free_vpp = false;
    run.assumed.push_back("vpp unpublished: " + std::to_string(v) +
                          ", the stack's default virtual stages per rank");
    return;
  }
  const int64_t L = run.model.layers, pp = run.plan.pp;
  bool even = L % pp == 0 && run.plan.first_stage_layers == 0 && run.plan.last_stage_layers == 0;
  bool some_v = false;
  for (int64_t v = 2; even && v <= L / pp; ++v) some_v = some_v || (L / pp) % v == 0;
  if (!some_v) {
    add_reason(reasons, "interleaved schedule with layers (" + std::to_string(L) + ") over pp " +
                            std::to_string(pp) + " in unequal virtual stages (not modelled)");
  }
}

}  // namespace

void read_row_job(JsonObjectReader& r, PublishedRun& run, std::vector<std::string>& reasons) {
  const std::string dt = run.dtype = r.get_enum("dtype", {"bf16", "fp8", "fp16", "tf32", "fp32"});
  run.job.dtype = dt == "bf16"   ? Dtype::bf16
                  : dt == "fp8"  ? Dtype::fp8
                  : dt == "fp16" ? Dtype::fp16
                  : dt == "tf32" ? Dtype::tf32
                                 : Dtype::fp32;
  if (!run.gpu.empty() && run.cluster.gpu.peak(run.job.dtype) <= 0) {
    add_reason(reasons, dt + " on " + run.gpu + " (no " + dt + " peak)");
  }
  const auto gb = int_or_unpublished(r, "global_batch");
  if (!gb) add_reason(reasons, "global batch unpublished");
  run.job.global_batch = gb.value_or(1);
  run.job.framework = run.stack;
  const StackSpec stack = stack_or_default(run.stack);
  apply_stack(stack, run.job);
  // TorchTitan's async TP (the row says): TP collectives overlapped with the GEMMs beside them.
  if (r.has("async_tp")) run.job.overlap.tp_comm = r.get_bool("async_tp");
  // The row's own fp8 scaling where the source names the recipe (Megatron-Bridge's fp8cs).
  if (r.has("fp8_scaling"))
    run.job.fp8.scaling = *fp8_scaling_from(r.get_enum("fp8_scaling", names_of(kFp8Scalings)));
  // The row's own kernels where the source says (torch.compile on an eager stack), else the stack's.
  if (r.has("kernels"))
    run.job.kernels = r.get_enum("kernels", {"fused", "eager"}) == "eager" ? Kernels::eager : Kernels::fused;
  // The row's own attention kernel where the source says which ran (llm-foundry's attn_impl).
  if (r.has("attention_kernel")) run.job.attention_kernel = r.get_string("attention_kernel");
  run.job.attention_kernels = resolve_attention_kernels(run.job.attention_kernel, stack);
  if (r.has("attention_unpad")) run.job.attention_unpad = r.get_bool("attention_unpad");
}

void read_row_plan(JsonObjectReader& p, PublishedRun& run, std::vector<std::string>& reasons) {
  PlanSpec& plan = run.plan;
  for (auto [key, field] : {std::pair{"tp", &plan.tp}, {"pp", &plan.pp}, {"dp", &plan.dp}}) {
    const auto v = int_or_unpublished(p, key);
    if (!v) add_reason(reasons, std::string(key) + " unpublished");
    *field = v.value_or(1);
  }
  plan.cp = int_or_unpublished(p, "cp", true).value_or(1);
  // Expert parallelism (validate_plan checks it against the row's experts and stack); etp
  // unpublished is Megatron-Core's default, tp.
  const auto ep = int_or_unpublished(p, "ep", true);
  if (!ep && p.has("ep") && unpublished(p.raw("ep")) && run.model.is_moe()) add_reason(reasons, "ep unpublished");
  plan.ep = ep.value_or(1);
  if (p.has("etp")) plan.etp = int_or_unpublished(p, "etp", true).value_or(0);
  // The token dispatcher, as the row's source states it; the stack's default, alltoall, otherwise.
  plan.moe_dispatcher = read_moe_dispatcher(p, "moe_dispatcher");
  const auto mb = int_or_unpublished(p, "micro_batch");
  run.free_micro_batch = !mb;
  plan.micro_batch = mb.value_or(1);
  const nlohmann::json& sp = p.raw("sequence_parallel");
  run.free_sequence_parallel = unpublished(sp) && plan.tp > 1;
  if (!unpublished(sp)) plan.sequence_parallel = p.get_bool("sequence_parallel");
  if (run.free_sequence_parallel && run.model.is_moe()) {
    // Megatron-Core's MoE layer raises without it at tp > 1 (moe_layer.py): nothing to choose.
    plan.sequence_parallel = true;
    run.free_sequence_parallel = false;
    run.assumed.push_back("sequence_parallel unpublished: on, which a mixture of experts needs at tp > 1");
  }
  read_recompute(p, run);
  read_sharding(p, run, reasons);
  read_schedule(p, run, reasons);
  // The embedding and the loss counted in the pipeline split, where the row's recipe says so.
  read_split_accounting(p, plan);
  p.finish();
  if (!plan.embedding_in_split && !plan.loss_in_split) uneven_stages(run, reasons);
  interleaved_split(run, reasons);
  // An unpublished micro-batch on a stack that splits the local batch into pp micro-batches
  // unless told otherwise (TorchTitan's pipeline_parallel_microbatches default).
  const int64_t local_batch = run.job.global_batch / std::max<int64_t>(1, plan.dp);
  if (run.free_micro_batch && run.job.pipeline.micro_batches_default_pp && plan.pp > 1 &&
      run.job.global_batch % plan.dp == 0 && local_batch % plan.pp == 0) {
    plan.micro_batch = local_batch / plan.pp;
    run.free_micro_batch = false;
    run.assumed.push_back("micro_batch unpublished: " + std::to_string(plan.micro_batch) +
                          ", the stack's default of pp (" + std::to_string(plan.pp) +
                          ") micro-batches per iteration");
  }
  const int64_t per_replica = plan.micro_batch * plan.dp;
  if (run.job.global_batch % per_replica != 0) {
    add_reason(reasons, "global batch " + std::to_string(run.job.global_batch) +
                            " is not a multiple of micro_batch x dp");
  }
  plan.num_micro_batches = std::max<int64_t>(1, run.job.global_batch / per_replica);
}

void read_row_measured(JsonObjectReader& r, const CorpusFile& f, PublishedRun& run,
                       std::vector<std::string>& reasons) {
  const nlohmann::json& m = r.raw("measured");
  nlohmann::json list = m.is_array() ? m : nlohmann::json::array({m});
  if (list.empty()) r.fail("measured", "must be an object or a non-empty list of objects");
  // Preference: what needs no FLOP formula first.
  const char* order[] = {"iteration_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                         "tflops_per_gpu", "mfu", "hfu"};
  int best = 99;
  std::string no_formula;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = r.path_of("measured");
    if (m.is_array()) at.append("[").append(std::to_string(i)).append("]");
    JsonObjectReader mr(list[i], f.path, at);
    Measurement x;
    x.value = mr.get_number("value", 1e-12, 1e18);
    x.metric = mr.get_enum("metric", {"iteration_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                                      "tflops_per_gpu", "mfu", "hfu", "peak_memory_gib"});
    x.convention = mr.get_string("convention");
    mr.finish();
    if (!f.conventions.count(x.convention)) mr.fail("convention", "must be a key of the file's conventions");
    if (x.metric == "peak_memory_gib") {  // beside the throughput, not instead of it
      run.measured_peak_memory_bytes = x.value * 1024 * 1024 * 1024;
      continue;
    }
    if ((x.metric == "mfu" || x.metric == "hfu") && x.value > 1) mr.fail("value", "MFU and HFU are fractions (0-1)");
    const int rank = static_cast<int>(std::find(std::begin(order), std::end(order), x.metric) - std::begin(order));
    const auto form = f.formulas.find(x.convention);
    const bool needs_formula = rank >= 3;
    const bool needs_peak = rank >= 4;
    if (needs_formula && (form == f.formulas.end() || (needs_peak && form->second.peak_flops_per_gpu <= 0))) {
      no_formula = x.convention;
      continue;
    }
    if (rank < best) {
      best = rank;
      run.measured = x;
    }
  }
  if (best == 99) {
    add_reason(reasons, "measured only in convention \"" + no_formula + "\", which has no formula");
    return;
  }
  const double tokens = static_cast<double>(run.job.global_batch * run.model.seq_len);
  const double gpus = static_cast<double>(run.gpus), v = run.measured.value;
  double t = 0;
  if (best == 0) t = v;
  if (best == 1) t = tokens / v;
  if (best == 2) t = tokens / (v * gpus);
  if (best >= 3 && run.model.is_moe()) {
    // The formulas (megatron_hw, 6n_attn) count a dense model's FLOPs.
    add_reason(reasons, "mixture of experts measured only in a FLOP convention");
    return;
  }
  if (best >= 3) {
    const ConventionFormula& cf = f.formulas.at(run.measured.convention);
    const double flops = formula_flops_per_iteration(cf.flops, run.model, run.job.global_batch, f.path);
    t = best == 3 ? flops / (gpus * v * 1e12) : flops / (gpus * v * cf.peak_flops_per_gpu);
  }
  run.measured_iteration_time_s = t;
}

}  // namespace parallax::detail
