// Spec structs -> JSON, the inverse of spec_json.cpp's readers (what they read back).
#include <string>

#include "model_json_parts.hpp"
#include "parallax/core/enum_names.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {

using nlohmann::json;

json to_json(const ModelSpec& m) {
  json j = {{"name", m.name},
          {"source", m.source},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"ffn_hidden", m.ffn_hidden},
          {"seq_len", m.seq_len},
          {"vocab", m.vocab},
          {"activation", to_string(m.activation)},
          {"position", to_string(m.position)},
          {"tied_embeddings", m.tied_embeddings},
          {"norm", to_string(m.norm)},
          {"dropout", m.dropout}};
  if (m.decoupled_head_dim()) j["head_dim"] = m.kv_channels;
  // Written only when off, so the files of models with biases stay as they were.
  if (!m.linear_bias) j["linear_bias"] = false;
  // Only a mixture of experts has it, so the files of dense models stay as they were.
  if (m.is_moe()) j["moe"] = moe_to_json(m.moe);
  // Only rotary models have them (the reader refuses them elsewhere).
  if (m.position == Position::rope) {
    j["rope_base"] = m.rope_base;
    if (m.has_rope_scaling())
      j["rope_scaling"] = {{"factor", m.rope_scaling.factor},
                           {"low_freq_factor", m.rope_scaling.low_freq_factor},
                           {"high_freq_factor", m.rope_scaling.high_freq_factor},
                           {"original_max_position", m.rope_scaling.original_max_position}};
  }
  return j;
}

json to_json(const GpuSpec& g) {
  // A dtype without math is written by leaving it out: the reader takes absence as 0.
  json peaks = json::object();
  for (Dtype d : kDtypes)
    if (g.peak(d) != 0) peaks[to_string(d)] = g.peak(d);
  json out = {{"name", g.name},
          {"source", g.source},
          {"peak_flops_per_s", peaks},
          {"hbm_bytes", g.hbm_bytes},
          {"hbm_bandwidth_bytes_per_s", g.hbm_bandwidth_bytes_per_s}};
  if (g.sm_count > 0) out["sm_count"] = g.sm_count;
  if (!g.arch.empty()) out["arch"] = g.arch;
  if (g.gemm_tile_m > 0)
    out["gemm_tile"] = {{"m", g.gemm_tile_m}, {"n", g.gemm_tile_n}, {"source", g.gemm_tile_source}};
  return out;
}

json to_json(const ClusterSpec& c) {
  const IntraNodeFabric& a = c.intra;
  const InterNodeNetwork& e = c.inter;
  json out = {{"name", c.name},
          {"source", c.source},
          {"gpu", to_json(c.gpu)},  // inline, so the file does not depend on the preset table
          {"nodes", c.nodes},
          {"gpus_per_node", c.gpus_per_node},
          {"intra_node",
           {{"kind", a.kind},
            {"nvlink_bandwidth_bytes_per_s", a.nvlink_bandwidth_bytes_per_s},
            {"allreduce_busbw_bytes_per_s", a.allreduce_busbw_bytes_per_s},
            {"p2p_bandwidth_bytes_per_s", a.p2p_bandwidth_bytes_per_s},
            {"latency_s", a.latency_s}}},
          {"inter_node",
           {{"kind", e.kind},
            {"nics_per_node", e.nics_per_node},
            {"nic_bandwidth_bytes_per_s", e.nic_bandwidth_bytes_per_s},
            {"nic_effective_bandwidth_bytes_per_s", e.nic_effective_bandwidth_bytes_per_s},
            {"rail_optimized", e.rail_optimized},
            {"tiers", e.tiers},
            {"switch_radix", e.switch_radix},
            {"oversubscription", e.oversubscription},
            {"latency_s", e.latency_s}}},
          {"profile", c.profile}};
  if (!e.gpu_nic.empty()) out["inter_node"]["gpu_nic"] = e.gpu_nic;
  if (c.gpus_per_host > 0) out["gpus_per_host"] = c.gpus_per_host;
  return out;
}

json to_json(const JobSpec& j) {
  json out = json::object();
  for (const JobField& f : job_fields()) write_job_field(f, j, out);
  return out;
}

// Every field, or, where the field says so, only where it differs from what its absence reads as,
// so that the files of plans without it stay as they were (plan_fields.cpp).
json to_json(const PlanSpec& p) {
  json out = json::object();
  for (const PlanField& f : plan_fields()) {
    switch (f.type) {
      case FieldType::integer:
        if (written(f, p.*f.integer)) out[f.key] = p.*f.integer;
        break;
      case FieldType::on_off:
        if (f.always_written || p.*f.on_off) out[f.key] = p.*f.on_off;
        break;
      case FieldType::name:
        if (const std::string s = f.spelling(p); f.always_written || s != f.omitted_spelling) out[f.key] = s;
        break;
    }
  }
  return out;
}

}  // namespace parallax
