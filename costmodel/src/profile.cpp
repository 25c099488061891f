#include "parallax/costmodel/profile.hpp"

#include <cmath>
#include <cstdlib>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"

namespace parallax {

double EfficiencyProfile::gemm_efficiency(double min_dim) const {
  const auto& t = gemm_efficiency_by_min_dim;
  if (min_dim <= t.front().first) return t.front().second;
  if (min_dim >= t.back().first) return t.back().second;
  for (size_t i = 1; i < t.size(); ++i) {
    if (min_dim <= t[i].first) {
      const double x0 = std::log2(t[i - 1].first);
      const double x1 = std::log2(t[i].first);
      const double w = (std::log2(min_dim) - x0) / (x1 - x0);
      return t[i - 1].second + w * (t[i].second - t[i - 1].second);
    }
  }
  return t.back().second;
}

const char* collective_json_name(Collective c) { return to_string(c); }

double collective_steps(Collective c, int64_t n) {
  const double x = static_cast<double>(n);
  switch (c) {
    case Collective::all_reduce: return 2 * (x - 1);
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::broadcast: return x - 1;
    case Collective::send_recv: return 1;
  }
  return 1;
}

double fitted_time_s(const CollectiveFit& f, int64_t ranks, double bytes) {
  if (bytes <= 0 || (ranks <= 1 && f.collective != Collective::send_recv)) return 0;
  const double alpha = f.alpha_s * collective_steps(f.collective, ranks) /
                       collective_steps(f.collective, f.ranks);
  return alpha + busbw_factor(f.collective, ranks) * bytes / f.busbw_bytes_per_s;
}

const GemmShapeEfficiency* EfficiencyProfile::gemm_shape(const std::string& role, double batch,
                                                         double m, double n, double k) const {
  for (const GemmShapeEfficiency& g : gemm_efficiency_by_shape)
    if (g.role == role && g.batch == batch && g.m == m && g.n == n && g.k == k) return &g;
  return nullptr;
}

const ClassLayerEfficiency* EfficiencyProfile::class_layer(const std::string& op_class,
                                                           const LayerKey& layer, bool exact) const {
  for (const ClassLayerEfficiency& c : op_class_efficiency_by_layer)
    if (c.op_class == op_class && c.layer == layer) return &c;
  if (exact || layer.tp == 0) return nullptr;
  LayerKey any = layer;
  any.tp = 0;
  return class_layer(op_class, any, true);
}

// A fit with a layout describes groups of exactly that layout: ranks, nodes and ranks on the
// fullest node (a 2 x 8 all-reduce says nothing about 8 nodes x 1, whose ring crosses the
// network at every step). A fit without one (older profiles, the microbenchmark sweep):
// spanning nodes, groups of its rank count that span nodes; within a node, groups within one
// node, the nearest size (one node's fabric; fitted_time_s scales alpha by the ring's steps).
const CollectiveFit* EfficiencyProfile::collective_fit(Collective c, const GroupLayout& g) const {
  const bool inter_node = g.nodes > 1;
  const CollectiveFit* nearest = nullptr;
  for (const CollectiveFit& f : communication) {
    if (f.collective != c) continue;
    if (f.nodes > 0) {
      if (f.ranks == g.ranks && f.nodes == g.nodes && f.ranks_per_node == g.per_node) return &f;
      continue;
    }
    if (f.inter_node != inter_node || (inter_node && f.ranks != g.ranks)) continue;
    if (!nearest || std::llabs(f.ranks - g.ranks) < std::llabs(nearest->ranks - g.ranks)) nearest = &f;
  }
  return nearest;
}

namespace {

// The profile's stacks, comma-separated, for the errors that name them.
std::string known_stacks(const std::map<std::string, SoftwareStack>& frameworks) {
  std::string known;
  for (const auto& [k, v] : frameworks) known += (known.empty() ? "" : ", ") + k;
  return known;
}

}  // namespace

std::string EfficiencyProfile::default_stack() const {
  if (frameworks.count("megatron-lm") || frameworks.empty()) return "megatron-lm";
  if (frameworks.size() == 1) return frameworks.begin()->first;
  throw InputError("profile " + name, "$.frameworks",
                   "has several stacks and no megatron-lm: name one with --stack (" +
                       known_stacks(frameworks) + ")");
}

const SoftwareStack& EfficiencyProfile::framework(const std::string& fw) const {
  auto it = frameworks.find(fw);
  if (it != frameworks.end()) return it->second;
  throw InputError("profile " + name, "$.frameworks",
                   "no entry for stack \"" + fw + "\"; known: " + known_stacks(frameworks));
}

Collective read_fitted_collective(JsonObjectReader& r) {
  const std::string c =
      r.get_enum("collective", {"all_reduce", "reduce_scatter", "all_gather", "send_recv"});
  if (c == "all_reduce") return Collective::all_reduce;
  if (c == "reduce_scatter") return Collective::reduce_scatter;
  if (c == "all_gather") return Collective::all_gather;
  return Collective::send_recv;
}

namespace {

const nlohmann::json& array_of(JsonObjectReader& r, const std::string& key) {
  const nlohmann::json& a = r.raw(key);
  if (!a.is_array()) r.fail(key, "must be an array of objects");
  return a;
}

void read_shape_table(JsonObjectReader& r, EfficiencyProfile& p) {
  const nlohmann::json& a = array_of(r, "gemm_efficiency_by_shape");
  for (size_t i = 0; i < a.size(); ++i) {
    JsonObjectReader e(a[i], r.source(), r.path_of("gemm_efficiency_by_shape") + "[" + std::to_string(i) + "]");
    GemmShapeEfficiency g;
    g.role = e.get_enum("role", {"forward", "dgrad", "wgrad"});
    g.batch = static_cast<double>(e.get_int_or("batch", 1, int64_t{1} << 40, 1));
    g.m = static_cast<double>(e.get_int("m", 1, int64_t{1} << 40));
    g.n = static_cast<double>(e.get_int("n", 1, int64_t{1} << 40));
    g.k = static_cast<double>(e.get_int("k", 1, int64_t{1} << 40));
    g.efficiency = e.get_number("efficiency", 1e-6, 1);
    if (e.has("warm_efficiency")) g.warm_efficiency = e.get_number("warm_efficiency", 1e-6, 1);
    e.finish();
    if (p.gemm_shape(g.role, g.batch, g.m, g.n, g.k))
      throw InputError(r.source(), e.path_of("m"), "shape listed twice for the same role");
    p.gemm_efficiency_by_shape.push_back(g);
  }
}

void read_class_layers(JsonObjectReader& r, EfficiencyProfile& p) {
  const nlohmann::json& a = array_of(r, "op_class_efficiency_by_layer");
  for (size_t i = 0; i < a.size(); ++i) {
    JsonObjectReader e(a[i], r.source(), r.path_of("op_class_efficiency_by_layer") + "[" + std::to_string(i) + "]");
    ClassLayerEfficiency c;
    c.op_class = e.get_string("class");
    if (!p.op_class_efficiency.count(c.op_class))
      throw InputError(r.source(), e.path_of("class"),
                       "\"" + c.op_class + "\" has no entry in op_class_efficiency (the aggregate other shards use)");
    constexpr int64_t kMax = int64_t{1} << 40;
    c.layer.seq_len = e.get_int("seq_len", 1, kMax);
    c.layer.hidden = e.get_int("hidden", 1, kMax);
    c.layer.heads = e.get_int("heads", 1, kMax);
    c.layer.ffn_hidden = e.get_int("ffn_hidden", 1, kMax);
    c.layer.vocab = e.get_int("vocab", 1, kMax);
    if (e.has("tp")) c.layer.tp = e.get_int("tp", 1, kMax);
    c.efficiency = e.get_number("efficiency", 1e-6, 100);
    if (e.has("warm_efficiency")) c.warm_efficiency = e.get_number("warm_efficiency", 1e-6, 100);
    e.finish();
    if (p.class_layer(c.op_class, c.layer, true))
      throw InputError(r.source(), e.path_of("class"), "class, layer dimensions and tp listed twice");
    p.op_class_efficiency_by_layer.push_back(c);
  }
}

void read_communication(JsonObjectReader& r, EfficiencyProfile& p) {
  const nlohmann::json& a = array_of(r, "communication");
  for (size_t i = 0; i < a.size(); ++i) {
    JsonObjectReader e(a[i], r.source(), r.path_of("communication") + "[" + std::to_string(i) + "]");
    CollectiveFit f;
    f.collective = read_fitted_collective(e);
    f.inter_node = e.get_enum("span", {"intra_node", "inter_node"}) == "inter_node";
    f.ranks = e.get_int("ranks", 2, 1 << 24);
    f.alpha_s = e.get_number("alpha_s", 0, 10);
    f.busbw_bytes_per_s = e.get_number("busbw_bytes_per_s", 1e3, 1e15);
    f.source = e.get_string_or("source", "");
    if (e.has("nodes") || e.has("ranks_per_node")) {
      f.nodes = e.get_int("nodes", 1, f.ranks);
      f.ranks_per_node = e.get_int("ranks_per_node", 1, f.ranks);
      // The fullest node holds ranks_per_node; every node holds at least one.
      if (f.ranks_per_node * f.nodes < f.ranks || f.ranks_per_node + (f.nodes - 1) > f.ranks)
        e.fail("ranks_per_node", "nodes x ranks_per_node must hold ranks, each node at least one (got " +
                                     std::to_string(f.nodes) + " x " + std::to_string(f.ranks_per_node) +
                                     " for " + std::to_string(f.ranks) + " ranks)");
      if ((f.nodes > 1) != f.inter_node)
        e.fail("nodes", std::string("must be ") + (f.inter_node ? "> 1 for span inter_node" : "1 for span intra_node") +
                            " (got " + std::to_string(f.nodes) + ")");
    }
    e.finish();
    for (const CollectiveFit& o : p.communication)
      if (o.collective == f.collective && o.inter_node == f.inter_node && o.ranks == f.ranks &&
          o.nodes == f.nodes && o.ranks_per_node == f.ranks_per_node)
        throw InputError(r.source(), e.path_of("ranks"),
                         "collective, span, ranks and layout listed twice");
    p.communication.push_back(f);
  }
}

void read_provenance(JsonObjectReader& r, EfficiencyProfile& p) {
  JsonObjectReader v = r.object("provenance");
  p.provenance.machine = v.get_string("machine");
  p.provenance.backend = v.get_string("backend");
  p.provenance.date = v.get_string("date");
  p.provenance.tool = v.get_string_or("tool", "");
  p.provenance.threads_per_rank = v.get_int_or("threads_per_rank", 0, 4096, 0);
  if (v.has("source_runs")) {
    const nlohmann::json& runs = v.raw("source_runs");
    if (!runs.is_array()) v.fail("source_runs", "must be an array of strings");
    for (const auto& x : runs) {
      if (!x.is_string()) v.fail("source_runs", "must be an array of strings");
      p.provenance.source_runs.push_back(x.get<std::string>());
    }
  }
  v.finish();
}

// gemm_efficiency_by_min_dim: [min_dim, efficiency] pairs, min_dim increasing.
void read_min_dim_table(JsonObjectReader& r, EfficiencyProfile& p) {
  const nlohmann::json& table = r.raw("gemm_efficiency_by_min_dim");
  const std::string tpath = r.path_of("gemm_efficiency_by_min_dim");
  if (!table.is_array() || table.empty()) {
    throw InputError(r.source(), tpath, "must be a non-empty array of [min_dim, efficiency] pairs");
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& row = table[i];
    const std::string rpath = tpath + "[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() != 2 || !row[0].is_number() || !row[1].is_number()) {
      throw InputError(r.source(), rpath, "must be a pair [min_dim, efficiency] of numbers");
    }
    const double dim = row[0].get<double>();
    const double eff = row[1].get<double>();
    if (!std::isfinite(dim) || dim < 1) throw InputError(r.source(), rpath, "min_dim must be >= 1");
    if (!std::isfinite(eff) || eff <= 0 || eff > 1) {
      throw InputError(r.source(), rpath, "efficiency must be in (0, 1]");
    }
    if (!p.gemm_efficiency_by_min_dim.empty() && dim <= p.gemm_efficiency_by_min_dim.back().first) {
      throw InputError(r.source(), rpath, "min_dim must increase from row to row");
    }
    p.gemm_efficiency_by_min_dim.emplace_back(dim, eff);
  }
}

}  // namespace

EfficiencyProfile read_profile(JsonObjectReader& r) {
  EfficiencyProfile p;
  p.name = r.get_string("name");
  p.source = r.get_string("source");
  if (r.has("provenance")) read_provenance(r, p);
  read_min_dim_table(r, p);
  if (r.has("gemm_efficiency_curve")) {
    JsonObjectReader c = r.object("gemm_efficiency_curve");
    p.gemm_curve_e_max = c.get_number("e_max", 0.01, 1);
    p.gemm_curve_d_half = c.get_number("d_half", 0, 1e6);
    c.finish();
  }
  // Measured like the class efficiencies (calibrate writes it), so the same floor: a sanitized
  // build on a loaded 2-core machine measured 0.0077, and calibrate must read back what it wrote.
  p.memory_bound_efficiency = r.get_number("memory_bound_efficiency", 1e-6, 1);
  if (r.has("fused_attention")) {
    JsonObjectReader f = r.object("fused_attention");
    p.fused_attention_forward = f.get_number("forward", 0.01, 1);
    p.fused_attention_backward = f.get_number("backward", 0.01, 1);
    p.fused_attention_source = f.get_string("source");
    if (p.fused_attention_source.empty()) f.fail("source", "must say where the efficiencies come from");
    f.finish();
  }
  {
    JsonObjectReader o = r.object("overlap");
    p.tp_overlap = o.get_number("tp", 0, 1);
    p.pp_overlap = o.get_number("pp", 0, 1);
    p.dp_overlap = o.get_number("dp", 0, 1);
    o.finish();
  }
  p.memory_reserve_bytes = r.get_number("memory_reserve_bytes", 0, 1e12);
  if (r.has("moe_layer_host_s")) p.moe_layer_host_s = r.get_number("moe_layer_host_s", 0, 1);
  p.carries_fit_of = r.get_string_or("carries_fit_of", "");
  if (r.has("carries_fit_of") && (p.carries_fit_of.empty() || p.carries_fit_of == p.name)) {
    r.fail("carries_fit_of", "must name another profile");
  }
  const nlohmann::json& fws = r.raw("frameworks");
  if (!fws.is_object() || fws.empty()) {
    throw InputError(r.source(), r.path_of("frameworks"), "must be a non-empty object");
  }
  for (const auto& [key, val] : fws.items()) {
    JsonObjectReader f(val, r.source(), r.path_of("frameworks") + "." + key);
    SoftwareStack s;
    s.compute_efficiency_scale = f.get_number("compute_efficiency_scale", 0.01, 2);
    f.finish();
    p.frameworks[key] = s;
  }
  if (r.has("gemm_efficiency_by_shape")) read_shape_table(r, p);
  if (r.has("op_class_efficiency")) {
    JsonObjectReader o = r.object("op_class_efficiency");
    for (const auto& [key, val] : r.raw("op_class_efficiency").items()) {
      (void)val;
      // Can exceed 1: the roofline uses the GPU preset's nominal bandwidth and the cost model's
      // byte counts (e.g. dropout masks a trainer without dropout never moves, or data a CPU
      // keeps in cache); the fit is the ratio of the two times either way.
      p.op_class_efficiency[key] = o.get_number(key, 1e-6, 100);
    }
    o.finish();
  }
  if (r.has("op_class_efficiency_warm")) {
    JsonObjectReader o = r.object("op_class_efficiency_warm");
    for (const auto& [key, val] : r.raw("op_class_efficiency_warm").items()) {
      (void)val;
      p.op_class_efficiency_warm[key] = o.get_number(key, 1e-6, 100);
    }
    o.finish();
  }
  if (r.has("op_class_efficiency_by_layer")) read_class_layers(r, p);
  if (r.has("cache_bytes_per_rank")) p.cache_bytes_per_rank = r.get_number("cache_bytes_per_rank", 0, 1e12);
  if (r.has("communication")) read_communication(r, p);
  r.finish();
  return p;
}

nlohmann::json to_json(const EfficiencyProfile& p) {
  nlohmann::json j;
  j["name"] = p.name;
  j["source"] = p.source;
  j["gemm_efficiency_by_min_dim"] = nlohmann::json::array();
  for (const auto& [dim, eff] : p.gemm_efficiency_by_min_dim) {
    j["gemm_efficiency_by_min_dim"].push_back({dim, eff});
  }
  if (p.gemm_curve_e_max > 0) {
    j["gemm_efficiency_curve"] = {{"e_max", p.gemm_curve_e_max}, {"d_half", p.gemm_curve_d_half}};
  }
  j["memory_bound_efficiency"] = p.memory_bound_efficiency;
  if (p.fused_attention_forward > 0) {
    j["fused_attention"] = {{"forward", p.fused_attention_forward},
                            {"backward", p.fused_attention_backward},
                            {"source", p.fused_attention_source}};
  }
  j["overlap"] = {{"tp", p.tp_overlap}, {"pp", p.pp_overlap}, {"dp", p.dp_overlap}};
  j["memory_reserve_bytes"] = p.memory_reserve_bytes;
  if (p.moe_layer_host_s > 0) j["moe_layer_host_s"] = p.moe_layer_host_s;
  if (!p.carries_fit_of.empty()) j["carries_fit_of"] = p.carries_fit_of;
  j["frameworks"] = nlohmann::json::object();
  for (const auto& [k, s] : p.frameworks) {
    j["frameworks"][k] = {{"compute_efficiency_scale", s.compute_efficiency_scale}};
  }
  const Provenance& v = p.provenance;
  if (!v.machine.empty() || !v.backend.empty()) {
    j["provenance"] = {{"machine", v.machine}, {"backend", v.backend}, {"date", v.date},
                       {"source_runs", v.source_runs}};
    if (!v.tool.empty()) j["provenance"]["tool"] = v.tool;
    if (v.threads_per_rank > 0) j["provenance"]["threads_per_rank"] = v.threads_per_rank;
  }
  if (!p.gemm_efficiency_by_shape.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const GemmShapeEfficiency& g : p.gemm_efficiency_by_shape) {
      nlohmann::json e = {{"role", g.role}, {"batch", static_cast<int64_t>(g.batch)},
                          {"m", static_cast<int64_t>(g.m)}, {"n", static_cast<int64_t>(g.n)},
                          {"k", static_cast<int64_t>(g.k)}, {"efficiency", g.efficiency}};
      if (g.warm_efficiency > 0) e["warm_efficiency"] = g.warm_efficiency;
      a.push_back(e);
    }
    j["gemm_efficiency_by_shape"] = a;
  }
  if (!p.op_class_efficiency.empty()) j["op_class_efficiency"] = p.op_class_efficiency;
  if (!p.op_class_efficiency_warm.empty()) j["op_class_efficiency_warm"] = p.op_class_efficiency_warm;
  if (!p.op_class_efficiency_by_layer.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const ClassLayerEfficiency& c : p.op_class_efficiency_by_layer) {
      const LayerKey& k = c.layer;
      nlohmann::json e = {{"class", c.op_class}, {"seq_len", k.seq_len}, {"hidden", k.hidden},
                          {"heads", k.heads}, {"ffn_hidden", k.ffn_hidden}, {"vocab", k.vocab},
                          {"efficiency", c.efficiency}};
      if (k.tp > 0) e["tp"] = k.tp;
      if (c.warm_efficiency > 0) e["warm_efficiency"] = c.warm_efficiency;
      a.push_back(e);
    }
    j["op_class_efficiency_by_layer"] = a;
  }
  if (p.cache_bytes_per_rank > 0) j["cache_bytes_per_rank"] = p.cache_bytes_per_rank;
  if (!p.communication.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const CollectiveFit& f : p.communication) {
      nlohmann::json e = {{"collective", collective_json_name(f.collective)},
                          {"span", f.inter_node ? "inter_node" : "intra_node"},
                          {"ranks", f.ranks}, {"alpha_s", f.alpha_s},
                          {"busbw_bytes_per_s", f.busbw_bytes_per_s}};
      if (!f.source.empty()) e["source"] = f.source;
      if (f.nodes > 0) {
        e["nodes"] = f.nodes;
        e["ranks_per_node"] = f.ranks_per_node;
      }
      a.push_back(e);
    }
    j["communication"] = a;
  }
  return j;
}

EfficiencyProfile carry_fit(const EfficiencyProfile& carrier, const EfficiencyProfile& fitted) {
  EfficiencyProfile out = fitted;
  out.name = carrier.name;
  out.source = carrier.source;
  out.provenance = carrier.provenance;
  out.carries_fit_of = carrier.carries_fit_of;
  return out;
}

EfficiencyProfile load_profile(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 &&
                        name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  if (is_path) {
    const nlohmann::json j = read_json_file(name_or_path);
    JsonObjectReader r(j, name_or_path);
    return read_profile(r);
  }
  const nlohmann::json j = preset_json("profiles", name_or_path);
  JsonObjectReader r(j, "preset profiles/" + name_or_path);
  return read_profile(r);
}

}  // namespace parallax
