#include "parallax/inputs/recipe.hpp"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

using Setter = std::function<void(PlanOptions&, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> s = {
      {"model", [](PlanOptions& o, const std::string& v) { o.model = v; }},
      {"cluster", [](PlanOptions& o, const std::string& v) { o.cluster = v; }},
      {"nodes", [](PlanOptions& o, const std::string& v) { o.nodes = v; }},
      {"gpus", [](PlanOptions& o, const std::string& v) { o.gpus = v; }},
      {"global_batch", [](PlanOptions& o, const std::string& v) { o.global_batch = v; }},
      {"tp", [](PlanOptions& o, const std::string& v) { o.tp = v; }},
      {"pp", [](PlanOptions& o, const std::string& v) { o.pp = v; }},
      {"vpp", [](PlanOptions& o, const std::string& v) { o.vpp = v; }},
      {"mbs", [](PlanOptions& o, const std::string& v) { o.mbs = v; }},
      {"recompute", [](PlanOptions& o, const std::string& v) { o.recompute = v; }},
      {"recompute_layers", [](PlanOptions& o, const std::string& v) { o.recompute_layers = v; }},
      {"zero", [](PlanOptions& o, const std::string& v) { o.zero = v; }},
      {"first_stage_layers", [](PlanOptions& o, const std::string& v) { o.first_stage_layers = v; }},
      {"last_stage_layers", [](PlanOptions& o, const std::string& v) { o.last_stage_layers = v; }},
      {"schedule", [](PlanOptions& o, const std::string& v) { o.schedule = v; }},
      {"order", [](PlanOptions& o, const std::string& v) { o.order = v; }},
      {"dtype", [](PlanOptions& o, const std::string& v) { o.dtype = v; }},
      {"bytes_per_param", [](PlanOptions& o, const std::string& v) { o.bytes_per_param = v; }},
      {"stack", [](PlanOptions& o, const std::string& v) { o.framework = v; }},
      {"attention_kernel", [](PlanOptions& o, const std::string& v) { o.attention_kernel = v; }},
      {"tokens", [](PlanOptions& o, const std::string& v) { o.tokens = v; }},
      {"price", [](PlanOptions& o, const std::string& v) { o.price = v; }},
      {"profile", [](PlanOptions& o, const std::string& v) { o.profile = v; }},
  };
  return s;
}

}  // namespace

std::string recipe_key(const std::string& flag) {
  std::string k = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
  for (char& c : k) c = c == '-' ? '_' : c;
  return k == "framework" ? "stack" : k;
}

PlanOptions read_recipe(const std::string& path, PlanOptions o, const std::set<std::string>& given) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(path, "$", "cannot read file");
  } catch (const YAML::Exception& e) {
    throw InputError(path, "$", "malformed YAML at line " + std::to_string(e.mark.line + 1) +
                                    ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (!doc.IsMap()) throw InputError(path, "$", "must be a mapping of flag names to values");
  for (const auto& item : doc) {
    const std::string key = item.first.as<std::string>();
    const YAML::Node& v = item.second;
    if (given.count(key) != 0) continue;  // the command line's flag wins
    if (key == "sp") {
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false"))
        throw InputError(path, "$.sp", "must be true or false");
      o.sp = v.Scalar() == "true";
      continue;
    }
    const auto it = setters().find(key);
    if (it == setters().end()) {
      std::string known = "sp";
      for (const auto& [k, s] : setters()) known += ", " + k;
      throw InputError(path, "$." + key, "unknown key (the recipe's keys are the flags': " + known + ")");
    }
    if (!v.IsScalar() || v.Scalar().empty())
      throw InputError(path, "$." + key, "must be a single value, as its flag takes");
    it->second(o, v.Scalar());
  }
  return o;
}

Resolved resolve_recipe(const std::string& path, const PlanOptions& options,
                        const std::set<std::string>& given) {
  try {
    return resolve(options);
  } catch (const InputError& e) {
    if (e.source() != "command line") throw;  // a preset or file the recipe names says so itself
    if (e.path().rfind("--", 0) != 0 || given.count(recipe_key(e.path())) != 0) throw;
    throw InputError(path, "$." + recipe_key(e.path()), e.rule());
  }
}

}  // namespace parallax
