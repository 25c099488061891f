#include "flag_file.hpp"

#include <map>

#include "parallax/inputs/recipe.hpp"

namespace parallax::flag_file {
namespace {

using Setter = std::function<void(PlanOptions&, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> s = {
      {"model", [](PlanOptions& o, const std::string& v) { o.model = v; }},
      {"cluster", [](PlanOptions& o, const std::string& v) { o.cluster = v; }},
      {"nodes", [](PlanOptions& o, const std::string& v) { o.nodes = v; }},
      {"gpus", [](PlanOptions& o, const std::string& v) { o.gpus = v; }},
      {"global_batch", [](PlanOptions& o, const std::string& v) { o.global_batch = v; }},
      {"seq_len", [](PlanOptions& o, const std::string& v) { o.seq_len = v; }},
      {"tp", [](PlanOptions& o, const std::string& v) { o.tp = v; }},
      {"pp", [](PlanOptions& o, const std::string& v) { o.pp = v; }},
      {"cp", [](PlanOptions& o, const std::string& v) { o.cp = v; }},
      {"ep", [](PlanOptions& o, const std::string& v) { o.ep = v; }},
      {"etp", [](PlanOptions& o, const std::string& v) { o.etp = v; }},
      {"moe_dispatcher", [](PlanOptions& o, const std::string& v) { o.moe_dispatcher = v; }},
      {"vpp", [](PlanOptions& o, const std::string& v) { o.vpp = v; }},
      {"microbatch_group", [](PlanOptions& o, const std::string& v) { o.microbatch_group = v; }},
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
      {"attention", [](PlanOptions& o, const std::string& v) { o.attention = v; }},
      {"tokens", [](PlanOptions& o, const std::string& v) { o.tokens = v; }},
      {"price", [](PlanOptions& o, const std::string& v) { o.price = v; }},
      {"profile", [](PlanOptions& o, const std::string& v) { o.profile = v; }},
  };
  return s;
}

// The flags that take no value: true or false in a recipe.
const std::map<std::string, bool PlanOptions::*>& switches() {
  static const std::map<std::string, bool PlanOptions::*> s = {
      {"sp", &PlanOptions::sp},
      {"account_for_embedding_in_pipeline_split", &PlanOptions::embedding_in_split},
      {"account_for_loss_in_pipeline_split", &PlanOptions::loss_in_split}};
  return s;
}

}  // namespace

YAML::Node load_mapping(const std::string& path) {
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
  return doc;
}

int64_t int_of(const std::string& path, const std::string& text, const std::string& at, int64_t min, int64_t max) {
  try {
    size_t used = 0;
    const long long x = std::stoll(text, &used);
    if (used == text.size() && x >= min && x <= max) return x;
  } catch (const std::exception&) {
  }
  throw InputError(path, at, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                 "] (got \"" + text + "\")");
}

bool bool_of(const std::string& path, const std::string& text, const std::string& at) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw InputError(path, at, "must be true or false (got \"" + text + "\")");
}

// Applies the job keys of `doc` (those `job_keys` allows) to o; `other` reads the rest and says
// whether it knew the key.
void apply_job_keys(const std::string& path, const YAML::Node& doc, PlanOptions& o,
                    const std::set<std::string>& given, const std::set<std::string>* job_keys,
                    const std::function<bool(const std::string&, const YAML::Node&)>& other) {
  for (const auto& item : doc) {
    const std::string key = item.first.as<std::string>();
    const YAML::Node& v = item.second;
    if (given.count(key) != 0) continue;  // the command line's flag wins
    if (other && other(key, v)) continue;
    if (const auto sw = switches().find(key); sw != switches().end()) {
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false"))
        throw InputError(path, "$." + key, "must be true or false");
      o.*(sw->second) = v.Scalar() == "true";
      continue;
    }
    const auto it = setters().find(key);
    if (it == setters().end() || (job_keys != nullptr && job_keys->count(key) == 0)) {
      if (job_keys != nullptr) {
        std::string known;
        for (const std::string& k : *job_keys) known += k + ", ";
        throw InputError(path, "$." + key,
                         "unknown key (a search file's keys: " + known +
                             "tp, pp, mbs, recompute, zero, sp, cp, ep, allow_cross_node_tp, "
                             "allow_all, uneven_pp, max_micro_batch)");
      }
      std::string known;
      for (const auto& [k, s] : switches()) known += (known.empty() ? "" : ", ") + k;
      for (const auto& [k, s] : setters()) known += ", " + k;
      throw InputError(path, "$." + key, "unknown key (the recipe's keys are the flags': " + known + ")");
    }
    if (!v.IsScalar() || v.Scalar().empty())
      throw InputError(path, "$." + key, "must be a single value, as its flag takes");
    it->second(o, v.Scalar());
  }
}

void rethrow_as_file_error(const InputError& e, const std::string& path,
                           const std::set<std::string>& given) {
  if (e.source() != "command line" || e.path().rfind("--", 0) != 0 ||
      given.count(recipe_key(e.path())) != 0)
    throw e;
  throw InputError(path, "$." + recipe_key(e.path()), e.rule());
}

}  // namespace parallax::flag_file
