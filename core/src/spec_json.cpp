// JSON -> spec structs (spec_to_json.cpp writes them back). Each reader first rejects unknown keys (so a typo is reported as
// `unknown key "layrs" (did you mean "layers"?)`, not as a missing "layers"), then reads every
// field with its range, then checks the rules that tie fields of the same object together.
#include "parallax/core/spec_json.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <limits>
#include <vector>

#include "json_text.hpp"
#include "model_json_parts.hpp"
#include "parallax/core/attention_kernel_io.hpp"
#include "parallax/core/enum_names.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/presets.hpp"

namespace parallax {

using nlohmann::json;

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::max();
constexpr int64_t kMaxNicsPerNode = 1024;
constexpr int64_t kMaxSwitchRadix = 1 << 16;
constexpr int64_t kMaxSmCount = 1024;  // B200: 148 SMs
constexpr int64_t kMinGemmTile = 8;     // a tensor core MMA's smallest side
constexpr int64_t kMaxGemmTile = 1024;  // the largest CTA tiles are 256 a side
// RoPE bases run from 10^4 (Llama 2) and 5*10^5 (Llama 3) to ~4*10^9 (million-token fine-tunes).
constexpr double kMaxRopeBase = 1e12;
constexpr double kMaxRopeFactor = 1e6;  // Llama 3.1 scales by 8, Llama 3.2 by 32

// Marks the keys an object may hold and rejects any other before a field is read.
void expect_keys(JsonObjectReader& r, std::initializer_list<const char*> keys) {
  for (const char* k : keys) r.ignore(k);
  r.finish();
}

double positive(JsonObjectReader& r, const std::string& key, double max) {
  const double x = r.get_number(key, 0, max);
  if (x <= 0) r.fail(key, "must be > 0 (got " + format_number(x) + ")");
  return x;
}

double positive_or_zero_if_absent(JsonObjectReader& r, const std::string& key, double max) {
  return r.has(key) ? positive(r, key, max) : 0.0;
}

// Latencies are seconds per hop; a second or more is a unit mistake (ms or us), not a network.
double latency(JsonObjectReader& r, const std::string& key) {
  const double x = r.get_number(key, 0, kUnbounded);
  if (x >= 1) r.fail(key, "must be < 1 second (got " + format_number(x) + ")");
  return x;
}

std::string nonempty_string(JsonObjectReader& r, const std::string& key) {
  std::string s = r.get_string(key);
  if (s.empty()) r.fail(key, "must not be empty");
  return s;
}

constexpr std::array kActivations{Activation::gelu, Activation::swiglu};
constexpr std::array kPositions{Position::learned, Position::rope, Position::alibi};
constexpr std::array kNorms{Norm::layernorm, Norm::rmsnorm};
constexpr std::array kExporters{Exporter::none, Exporter::megatron, Exporter::deepspeed,
                                Exporter::parallax, Exporter::torchtitan};

// An optional enum field: one of `all`'s spellings, or `fallback` when absent.
template <class E, size_t N>
E read_enum_or(JsonObjectReader& r, const std::string& key, const std::array<E, N>& all, E fallback) {
  return enum_from(r.get_enum_or(key, names_of(all), to_string(fallback)), all);
}

// A non-empty list of `all`'s spellings, without repeats.
template <class E, size_t N>
std::vector<E> read_enum_list(JsonObjectReader& r, const std::string& key, const std::array<E, N>& all) {
  std::vector<E> out;
  for (const std::string& x : r.get_enum_list(key, names_of(all))) out.push_back(enum_from(x, all));
  return out;
}

// "rope_base" and "rope_scaling" describe rotary embeddings: with learned or ALiBi positions they
// would be silently ignored, so they are refused there.
void read_rope(JsonObjectReader& r, ModelSpec& m) {
  for (const char* key : {"rope_base", "rope_scaling"})
    if (r.has(key) && m.position != Position::rope)
      r.fail(key, std::string("needs position \"rope\" (position is \"") + to_string(m.position) +
                      "\")");
  if (r.has("rope_base")) m.rope_base = positive(r, "rope_base", kMaxRopeBase);
  if (!r.has("rope_scaling")) return;
  JsonObjectReader s = r.object("rope_scaling");
  // Hugging Face's spelling, as in a config.json pasted in; too far from ours for a typo.
  if (s.has("original_max_position_embeddings"))
    s.fail("original_max_position_embeddings", "is spelled \"original_max_position\" here");
  expect_keys(s, {"factor", "low_freq_factor", "high_freq_factor", "original_max_position"});
  RopeScaling& x = m.rope_scaling;
  x.factor = s.get_number("factor", 1, kMaxRopeFactor);
  x.low_freq_factor = positive(s, "low_freq_factor", kMaxRopeFactor);
  x.high_freq_factor = positive(s, "high_freq_factor", kMaxRopeFactor);
  // Wavelengths between the two bounds are blended by (old_len / wavelength - low) / (high - low).
  if (x.high_freq_factor <= x.low_freq_factor)
    s.fail("high_freq_factor", "must be > low_freq_factor (" + format_number(x.low_freq_factor) +
                                   ") (got " + format_number(x.high_freq_factor) + ")");
  x.original_max_position = s.get_int("original_max_position", 1, Limits::max_seq_len);
}

}  // namespace

// ---- readers -----------------------------------------------------------------------------------

ModelSpec read_model(JsonObjectReader& r) {
  expect_keys(r, {"name", "source", "layers", "hidden", "heads", "kv_heads", "head_dim",
                  "ffn_hidden", "seq_len", "vocab", "activation", "position", "rope_base",
                  "rope_scaling", "tied_embeddings", "norm", "dropout", "linear_bias", "moe",
                  "parameters"});
  ModelSpec m;
  m.name = r.get_string_or("name", "custom");
  m.source = r.get_string_or("source", "");
  m.layers = r.get_int("layers", 1, Limits::max_layers);
  m.hidden = r.get_int("hidden", 1, Limits::max_hidden);
  m.heads = r.get_int("heads", 1, Limits::max_heads);
  m.kv_heads = r.get_int_or("kv_heads", 1, Limits::max_heads, m.heads);
  // Stated only where it differs from hidden / heads; the same width stated is the default's.
  m.set_head_dim(r.get_int_or("head_dim", 1, Limits::max_hidden, 0));
  m.ffn_hidden = r.get_int_or("ffn_hidden", 1, 4 * Limits::max_hidden, 4 * m.hidden);
  m.seq_len = r.get_int("seq_len", 1, Limits::max_seq_len);
  m.vocab = r.get_int("vocab", 1, Limits::max_vocab);
  m.activation = read_enum_or(r, "activation", kActivations, Activation::gelu);
  m.position = read_enum_or(r, "position", kPositions, Position::learned);
  read_rope(r, m);
  m.tied_embeddings = r.get_bool_or("tied_embeddings", true);
  m.norm = read_enum_or(r, "norm", kNorms, Norm::layernorm);
  m.dropout = r.get_number_or("dropout", 0, Limits::max_dropout, 0.1);
  m.linear_bias = r.get_bool_or("linear_bias", true);
  read_moe(r, m);

  if (m.kv_channels == 0 && m.hidden % m.heads != 0)
    r.fail("heads", "hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" +
                        std::to_string(m.heads) + ")");
  // Rotate-half RoPE pairs dimension i of a head with i + head_dim / 2.
  if (m.position == Position::rope && m.head_dim() % 2 != 0)
    r.fail(m.kv_channels > 0 ? "head_dim" : "heads",
           "rope positions need an even head_dim (hidden / heads unless stated) (got " +
               std::to_string(m.head_dim()) + ")");
  // GQA: each group of heads/kv_heads query heads shares one key/value head.
  if (m.heads % m.kv_heads != 0)
    r.fail("kv_heads", "must divide heads (" + std::to_string(m.heads) + ") (got " +
                           std::to_string(m.kv_heads) + ")");
  check_stated_parameters(r, m);
  return m;
}

GpuSpec read_gpu(JsonObjectReader& r) {
  expect_keys(r, {"name", "source", "peak_flops_per_s", "hbm_bytes", "hbm_bandwidth_bytes_per_s",
                  "sm_count", "arch", "gemm_tile"});
  GpuSpec g;
  g.name = r.get_string_or("name", "custom");
  g.source = r.get_string_or("source", "");
  JsonObjectReader peaks = r.object("peak_flops_per_s");
  expect_keys(peaks, {"fp32", "tf32", "bf16", "fp16", "fp8"});
  for (Dtype d : kDtypes)
    g.peak_flops_per_s[static_cast<size_t>(d)] =
        positive_or_zero_if_absent(peaks, to_string(d), Limits::max_flops_per_s);
  // Every trainer Parallax models does its GEMMs in a 16-bit format.
  if (g.peak(Dtype::bf16) == 0 && g.peak(Dtype::fp16) == 0)
    r.fail("peak_flops_per_s", "must give bf16 or fp16 (or both)");
  g.hbm_bytes = positive(r, "hbm_bytes", Limits::max_bytes);
  g.hbm_bandwidth_bytes_per_s = positive(r, "hbm_bandwidth_bytes_per_s", Limits::max_bytes_per_s);
  g.sm_count = r.get_int_or("sm_count", 1, kMaxSmCount, 0);
  g.arch = r.get_string_or("arch", "");
  if (r.has("arch") && !is_compute_capability(g.arch))
    r.fail("arch", "must be a compute capability such as \"sm90\" (got \"" + g.arch + "\")");
  if (r.has("gemm_tile")) {
    if (g.sm_count == 0) r.fail("gemm_tile", "needs sm_count: tiles are scheduled in waves over the SMs");
    JsonObjectReader t = r.object("gemm_tile");
    expect_keys(t, {"m", "n", "source"});
    g.gemm_tile_m = t.get_int("m", kMinGemmTile, kMaxGemmTile);
    g.gemm_tile_n = t.get_int("n", kMinGemmTile, kMaxGemmTile);
    g.gemm_tile_source = t.get_string_or("source", "");
  }
  return g;
}

namespace {

// "gpu" is either an inline GPU object or the name of a GPU preset (never a file path: a cluster
// file must not depend on the directory it is read from).
GpuSpec read_cluster_gpu(JsonObjectReader& r) {
  const json& v = r.raw("gpu");
  if (v.is_object()) {
    JsonObjectReader g = r.object("gpu");
    return read_gpu(g);
  }
  if (!v.is_string())
    r.fail("gpu",
           "must be a GPU preset name or a GPU object (got " + std::string(v.type_name()) + ")");
  const std::string name = v.get<std::string>();
  const std::vector<std::string> known = preset_names("gpus");
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    try {
      (void)preset_json("gpus", name);  // throws with the list of known names
    } catch (const InputError& e) {
      r.fail("gpu", e.rule());
    }
  }
  return load_gpu(name);
}

IntraNodeFabric read_intra(JsonObjectReader& r) {
  expect_keys(r, {"kind", "nvlink_bandwidth_bytes_per_s", "allreduce_busbw_bytes_per_s",
                  "p2p_bandwidth_bytes_per_s", "latency_s"});
  IntraNodeFabric f;
  f.kind = r.get_enum("kind", {"nvswitch", "nvlink-mesh", "pcie", "shared-memory"});
  f.nvlink_bandwidth_bytes_per_s =
      positive(r, "nvlink_bandwidth_bytes_per_s", Limits::max_bytes_per_s);
  f.allreduce_busbw_bytes_per_s =
      positive(r, "allreduce_busbw_bytes_per_s", Limits::max_bytes_per_s);
  f.p2p_bandwidth_bytes_per_s = positive(r, "p2p_bandwidth_bytes_per_s", Limits::max_bytes_per_s);
  f.latency_s = latency(r, "latency_s");
  return f;
}

InterNodeNetwork read_inter(JsonObjectReader& r) {
  expect_keys(r, {"kind", "nics_per_node", "nic_bandwidth_bytes_per_s",
                  "nic_effective_bandwidth_bytes_per_s", "rail_optimized", "tiers", "switch_radix",
                  "oversubscription", "latency_s", "gpu_nic"});
  InterNodeNetwork n;
  n.kind = nonempty_string(r, "kind");
  n.nics_per_node = r.get_int("nics_per_node", 1, kMaxNicsPerNode);
  n.nic_bandwidth_bytes_per_s = positive(r, "nic_bandwidth_bytes_per_s", Limits::max_bytes_per_s);
  n.nic_effective_bandwidth_bytes_per_s =
      positive(r, "nic_effective_bandwidth_bytes_per_s", Limits::max_bytes_per_s);
  if (n.nic_effective_bandwidth_bytes_per_s > n.nic_bandwidth_bytes_per_s)
    r.fail("nic_effective_bandwidth_bytes_per_s",
           "must be <= nic_bandwidth_bytes_per_s (" + format_number(n.nic_bandwidth_bytes_per_s) +
               ") (got " + format_number(n.nic_effective_bandwidth_bytes_per_s) + ")");
  n.rail_optimized = r.get_bool("rail_optimized");
  n.tiers = r.get_int("tiers", 1, 4);
  n.switch_radix = r.get_int("switch_radix", 2, kMaxSwitchRadix);
  n.oversubscription = r.get_number("oversubscription", 1, 64);
  n.latency_s = latency(r, "latency_s");
  if (r.has("gpu_nic")) {
    const json& rails = r.raw("gpu_nic");
    if (!rails.is_array()) r.fail("gpu_nic", "must be an array of NIC indices, one per GPU");
    for (size_t i = 0; i < rails.size(); ++i) {
      const json& v = rails[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n.nics_per_node)
        r.fail("gpu_nic", "entry " + std::to_string(i) + " must be a NIC index in [0, " +
                              std::to_string(n.nics_per_node) + ") (got " + describe_value(v) + ")");
      n.gpu_nic.push_back(v.get<int64_t>());
    }
  }
  return n;
}

}  // namespace

ClusterSpec read_cluster(JsonObjectReader& r) {
  expect_keys(r, {"name", "source", "gpu", "nodes", "gpus_per_node", "gpus_per_host", "intra_node",
                  "inter_node", "profile"});
  ClusterSpec c;
  c.name = r.get_string_or("name", "custom");
  c.source = r.get_string_or("source", "");
  c.gpu = read_cluster_gpu(r);
  c.nodes = r.get_int("nodes", 1, Limits::max_gpus);
  c.gpus_per_node = r.get_int("gpus_per_node", 1, Limits::max_gpus_per_node);
  // Both factors are bounded above, so the product cannot overflow.
  if (c.total_gpus() > Limits::max_gpus)
    r.fail("nodes", "nodes (" + std::to_string(c.nodes) + ") * gpus_per_node (" +
                        std::to_string(c.gpus_per_node) + ") = " + std::to_string(c.total_gpus()) +
                        " must be <= " + std::to_string(Limits::max_gpus));
  c.gpus_per_host = r.get_int_or("gpus_per_host", 1, c.gpus_per_node, 0);
  if (c.gpus_per_host > 0 && c.gpus_per_node % c.gpus_per_host != 0)
    r.fail("gpus_per_host", "must divide gpus_per_node (" + std::to_string(c.gpus_per_node) +
                                ") (got " + std::to_string(c.gpus_per_host) + ")");
  JsonObjectReader intra = r.object("intra_node");
  c.intra = read_intra(intra);
  JsonObjectReader inter = r.object("inter_node");
  c.inter = read_inter(inter);
  if (!c.inter.gpu_nic.empty() && static_cast<int64_t>(c.inter.gpu_nic.size()) != c.gpus_per_node)
    inter.fail("gpu_nic", "must list one NIC per GPU: gpus_per_node is " +
                              std::to_string(c.gpus_per_node) + " (got " +
                              std::to_string(c.inter.gpu_nic.size()) + " entries)");
  c.profile = nonempty_string(r, "profile");
  return c;
}

// Every field of the job in job_fields()' order: the framework's stack first gives what the rows
// after it may override (job_fields.cpp).
JobSpec read_job(JsonObjectReader& r) {
  for (const JobField& f : job_fields()) r.ignore(f.key);  // the keys known: any other is refused
  r.finish();
  JobSpec j;
  for (const JobField& f : job_fields()) read_job_field(r, f, j);
  return j;
}

// "capabilities": {"zero": [0, 1], "schedules": ["1f1b", "interleaved"], "positions": [...],
// "tensor_parallel": true, "sequence_parallel": true, "pipeline_parallel": true,
// "grouped_query_attention": true, "uneven_stages": "any", "fp8": true, "export": "megatron",
// "source": "..."}; what is left out is allowed.
void read_stack_capabilities(JsonObjectReader& r, StackCapabilities& c) {
  JsonObjectReader o = r.object("capabilities");
  expect_keys(o, {"zero", "schedules", "positions", "tensor_parallel", "sequence_parallel",
                  "zero0_sole_parallelism", "pipeline_parallel", "grouped_query_attention",
                  "uneven_stages", "fp8", "export",
                  "microbatch_groups", "context_parallel", "cp_comm_type",
                  "context_parallel_refusal", "context_parallel_within_node", "moe",
                  "expert_parallel", "expert_tensor_parallel", "expert_parallel_zero",
                  "moe_dispatchers", "moe_refusal", "pipeline_split_accounting", "source"});
  if (o.has("zero")) c.zero_stages = o.get_int_list("zero", 0, 3);
  if (o.has("schedules")) {
    c.schedules = read_enum_list(o, "schedules", kSchedules);
  }
  if (o.has("positions")) {
    c.positions = read_enum_list(o, "positions", kPositions);
  }
  c.tensor_parallel = o.get_bool_or("tensor_parallel", true);
  c.sequence_parallel = o.get_bool_or("sequence_parallel", c.tensor_parallel);
  c.zero0_sole_parallelism = o.get_bool_or("zero0_sole_parallelism", false);
  c.pipeline_parallel = o.get_bool_or("pipeline_parallel", true);
  c.grouped_query_attention = o.get_bool_or("grouped_query_attention", true);
  const std::string uneven = o.get_enum_or("uneven_stages", {"any", "none", "deepspeed_balanced"}, "any");
  c.uneven_stages = uneven == "none" ? UnevenStages::none
                    : uneven == "deepspeed_balanced" ? UnevenStages::deepspeed_balanced
                                                     : UnevenStages::any;
  c.pipeline_split_accounting = o.get_bool_or("pipeline_split_accounting", false);
  c.fp8 = o.get_bool_or("fp8", true);
  c.microbatch_groups = o.get_bool_or("microbatch_groups", true);
  c.context_parallel = o.get_bool_or("context_parallel", true);
  if (o.has("cp_comm_type")) c.cp_comm_type = o.get_enum("cp_comm_type", {"p2p", "a2a", "allgather", "a2a+p2p"});
  c.context_parallel_refusal = o.get_string_or("context_parallel_refusal", "");
  c.context_parallel_within_node = o.get_bool_or("context_parallel_within_node", false);
  if (!c.context_parallel && c.context_parallel_refusal.empty())
    o.fail("context_parallel_refusal", "must say why the stack has no context parallelism");
  if (c.context_parallel && !c.context_parallel_refusal.empty())
    o.fail("context_parallel_refusal", "only for a stack with \"context_parallel\": false");
  c.moe = o.get_bool_or("moe", false);
  c.expert_parallel = o.get_bool_or("expert_parallel", c.moe);
  c.expert_tensor_parallel = o.get_bool_or("expert_tensor_parallel", c.expert_parallel);
  if (o.has("expert_parallel_zero")) c.expert_parallel_zero = o.get_int_list("expert_parallel_zero", 0, 3);
  if (o.has("moe_dispatchers")) {
    c.moe_dispatchers = read_enum_list(o, "moe_dispatchers", kMoeDispatchers);
    if (!c.expert_parallel) o.fail("moe_dispatchers", "needs \"expert_parallel\": true");
  }
  c.moe_refusal = o.get_string_or("moe_refusal", "");
  if (c.expert_parallel && !c.moe) o.fail("expert_parallel", "needs \"moe\": true");
  if (c.expert_tensor_parallel && !c.expert_parallel)
    o.fail("expert_tensor_parallel", "needs \"expert_parallel\": true");
  for (const int64_t z : c.expert_parallel_zero)
    if (std::find(c.zero_stages.begin(), c.zero_stages.end(), z) == c.zero_stages.end())
      o.fail("expert_parallel_zero", "lists ZeRO stage " + std::to_string(z) + ", not in \"zero\"");
  if (c.moe && !c.moe_refusal.empty()) o.fail("moe_refusal", "only for a stack with \"moe\": false");
  c.exporter = read_enum_or(o, "export", kExporters, Exporter::none);
  if (o.get_string("source").empty()) o.fail("source", "must say where the capabilities come from");
  o.finish();
}

StackSpec read_stack(JsonObjectReader& r) {
  StackSpec s;
  s.name = r.get_string_or("name", "");
  s.source = r.get_string_or("source", "");
  s.attention = r.get_enum("attention", {"unfused", "fused"}) == "fused" ? Attention::fused
                                                                        : Attention::unfused;
  s.kernels = r.get_enum_or("kernels", {"fused", "eager"}, "fused") == "eager" ? Kernels::eager
                                                                             : Kernels::fused;
  if (r.has("attention_kernels")) read_stack_attention_kernels(r, s.attention_kernels);
  if (r.has("fp8")) {
    JsonObjectReader f = r.object("fp8");
    s.fp8.scaling = *fp8_scaling_from(f.get_enum("scaling", names_of(kFp8Scalings)));
    s.fp8.weight_cast_per_micro_batch =
        f.get_enum("weight_cast", {"per_iteration", "per_micro_batch"}) == "per_micro_batch";
    if (f.get_string("source").empty()) f.fail("source", "must say where the recipe comes from");
    f.finish();
  }
  if (r.has("overlap")) {
    JsonObjectReader o = r.object("overlap");
    expect_keys(o, {"grad_reduce", "param_gather", "sharded_prefetch", "tp_comm", "p2p",
                    "comm_ctas", "source"});
    s.overlap.grad_reduce = o.get_bool_or("grad_reduce", false);
    s.overlap.param_gather = o.get_bool_or("param_gather", false);
    s.overlap.sharded_prefetch = o.get_bool_or("sharded_prefetch", false);
    s.overlap.tp_comm = o.get_bool_or("tp_comm", false);
    s.overlap.p2p = o.get_bool_or("p2p", false);
    s.overlap.comm_ctas = o.get_int_or("comm_ctas", 0, kMaxSmCount, 0);
    (void)o.get_string_or("source", "");
  }
  if (r.has("selective_recompute")) {
    JsonObjectReader sr = r.object("selective_recompute");
    s.selective = sr.get_enum("policy", {"attention_core", "alternate_matmuls"}) == "alternate_matmuls"
                      ? SelectiveRecompute::alternate_matmuls
                      : SelectiveRecompute::attention_core;
    if (sr.get_string("source").empty()) sr.fail("source", "must say where the policy comes from");
    sr.finish();
  }
  if (r.has("pipeline")) {
    JsonObjectReader pl = r.object("pipeline");
    s.pipeline.sharded_stages =
        pl.get_enum_or("sharded_stages", {"refused", "gathered_once"}, "refused") == "gathered_once";
    s.pipeline.micro_batches_default_pp =
        pl.get_enum_or("default_micro_batches", {"plan", "pp"}, "plan") == "pp";
    s.pipeline.default_virtual_stages = pl.get_int_or("default_virtual_stages", 2, 64, 0);
    s.pipeline.unequal_virtual_stages =
        pl.get_enum_or("virtual_stages", {"equal", "unequal"}, "equal") == "unequal";
    s.pipeline.sequential_p2p = pl.get_enum_or("p2p", {"batched", "sequential"}, "batched") == "sequential";
    if (pl.get_string("source").empty()) pl.fail("source", "must say where the behaviour comes from");
    pl.finish();
  }
  if (r.has("capabilities")) read_stack_capabilities(r, s.capabilities);
  if (r.has("loss")) {
    JsonObjectReader l = r.object("loss");
    s.loss_bytes_per_logit = l.get_number("bytes_per_logit", 2, 64);
    if (l.get_string("source").empty()) l.fail("source", "must say where the figure comes from");
    l.finish();
  }
  r.finish();
  return s;
}

MoeDispatcher read_moe_dispatcher(JsonObjectReader& r, const std::string& key) {
  return read_enum_or(r, key, kMoeDispatchers, MoeDispatcher::alltoall);
}

void read_split_accounting(JsonObjectReader& r, PlanSpec& p) {
  p.embedding_in_split = r.get_bool_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_split = r.get_bool_or("account_for_loss_in_pipeline_split", false);
}

PlanSpec read_plan(JsonObjectReader& r) {
  for (const PlanField& f : plan_fields()) r.ignore(f.key);  // the keys known: any other is refused
  r.finish();
  PlanSpec p;
  for (const PlanField& f : plan_fields()) {
    switch (f.type) {
      case FieldType::integer:
        p.*f.integer = f.required ? r.get_int(f.key, f.min, f.max) : r.get_int_or(f.key, f.min, f.max, f.absent);
        break;
      case FieldType::on_off:
        p.*f.on_off = r.get_bool_or(f.key, false);
        break;
      case FieldType::name:
        f.read(r, p);
        break;
    }
  }
  return p;
}

}  // namespace parallax
