#include "parallax/costmodel/profile.hpp"

#include <cmath>
#include <sstream>

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

const SoftwareStack& EfficiencyProfile::framework(const std::string& fw) const {
  auto it = frameworks.find(fw);
  if (it != frameworks.end()) return it->second;
  std::ostringstream known;
  for (const auto& [k, v] : frameworks) known << (known.tellp() > 0 ? ", " : "") << k;
  throw InputError("profile " + name, "$.frameworks",
                   "no entry for framework \"" + fw + "\"; known: " + known.str());
}

EfficiencyProfile read_profile(JsonObjectReader& r) {
  EfficiencyProfile p;
  p.name = r.get_string("name");
  p.source = r.get_string("source");
  if (r.has("provenance")) r.ignore("provenance");
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
  p.memory_bound_efficiency = r.get_number("memory_bound_efficiency", 0.01, 1);
  {
    JsonObjectReader o = r.object("overlap");
    p.tp_overlap = o.get_number("tp", 0, 1);
    p.pp_overlap = o.get_number("pp", 0, 1);
    p.dp_overlap = o.get_number("dp", 0, 1);
    o.finish();
  }
  p.memory_reserve_bytes = r.get_number("memory_reserve_bytes", 0, 1e12);
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
  j["memory_bound_efficiency"] = p.memory_bound_efficiency;
  j["overlap"] = {{"tp", p.tp_overlap}, {"pp", p.pp_overlap}, {"dp", p.dp_overlap}};
  j["memory_reserve_bytes"] = p.memory_reserve_bytes;
  j["frameworks"] = nlohmann::json::object();
  for (const auto& [k, s] : p.frameworks) {
    j["frameworks"][k] = {{"compute_efficiency_scale", s.compute_efficiency_scale}};
  }
  return j;
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
