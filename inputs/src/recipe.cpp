#include "parallax/inputs/recipe.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>

#include "parallax/core/spec_json.hpp"

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

namespace {

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

// A value or a list of values, each read by `one`; at least one, no repeats.
template <class T, class F>
std::vector<T> values_of(const std::string& path, const std::string& key, const YAML::Node& v, F one) {
  std::vector<T> out;
  auto add = [&](const YAML::Node& x, const std::string& at) {
    if (!x.IsScalar()) throw InputError(path, at, "must be a value or a list of values");
    T y = one(x.Scalar(), at);
    if (std::find(out.begin(), out.end(), y) != out.end())
      throw InputError(path, at, "repeats an earlier value (got " + x.Scalar() + ")");
    out.push_back(y);
  };
  if (v.IsSequence()) {
    if (v.size() == 0) throw InputError(path, "$." + key, "must list at least one value");
    for (size_t i = 0; i < v.size(); ++i) add(v[i], "$." + key + "[" + std::to_string(i) + "]");
  } else {
    add(v, "$." + key);
  }
  return out;
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
    if (key == "sp") {
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false"))
        throw InputError(path, "$.sp", "must be true or false");
      o.sp = v.Scalar() == "true";
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
      std::string known = "sp";
      for (const auto& [k, s] : setters()) known += ", " + k;
      throw InputError(path, "$." + key, "unknown key (the recipe's keys are the flags': " + known + ")");
    }
    if (!v.IsScalar() || v.Scalar().empty())
      throw InputError(path, "$." + key, "must be a single value, as its flag takes");
    it->second(o, v.Scalar());
  }
}

}  // namespace

PlanOptions read_recipe(const std::string& path, PlanOptions o, const std::set<std::string>& given) {
  apply_job_keys(path, load_mapping(path), o, given, nullptr, {});
  return o;
}

SearchFile read_search_file(const std::string& path, const PlanOptions& base, const SearchFlags& flags,
                            const std::set<std::string>& given) {
  static const std::set<std::string> job_keys = {
      "model", "cluster", "nodes", "gpus", "global_batch", "stack", "dtype", "bytes_per_param",
      "attention_kernel", "tokens", "price", "profile", "order"};
  SearchFile f;
  f.job = base;
  f.flags = flags;
  auto ints = [&](const std::string& key, const YAML::Node& v, int64_t max) {
    return values_of<int64_t>(path, key, v, [&](const std::string& t, const std::string& at) {
      return int_of(path, t, at, 1, max);
    });
  };
  auto one_bool = [&](const std::string& key, const YAML::Node& v) {
    if (!v.IsScalar()) throw InputError(path, "$." + key, "must be true or false");
    return bool_of(path, v.Scalar(), "$." + key);
  };
  const auto other = [&](const std::string& key, const YAML::Node& v) {
    if (key == "tp") f.tp = ints(key, v, Limits::max_gpus);
    else if (key == "pp") f.pp = ints(key, v, Limits::max_gpus);
    else if (key == "mbs") f.mbs = ints(key, v, Limits::max_global_batch);
    else if (key == "zero")
      f.zero = values_of<int64_t>(path, key, v, [&](const std::string& t, const std::string& at) {
        return int_of(path, t, at, 0, 3);
      });
    else if (key == "recompute")
      f.recompute = values_of<Recompute>(path, key, v, [&](const std::string& t, const std::string& at) {
        if (t == "none") return Recompute::none;
        if (t == "selective") return Recompute::selective;
        if (t == "full") return Recompute::full;
        throw InputError(path, at, "must be none, selective or full (got \"" + t + "\")");
      });
    else if (key == "sp")
      f.sp = values_of<bool>(path, key, v, [&](const std::string& t, const std::string& at) {
        return bool_of(path, t, at);
      });
    else if (key == "cp" || key == "ep") {
      for (int64_t x : ints(key, v, Limits::max_gpus))
        if (x != 1)
          throw InputError(path, "$." + key, std::string(key == "cp" ? "context" : "expert") +
                                                 " parallelism is not modelled yet: only 1 (got " +
                                                 std::to_string(x) + ")");
    } else if (key == "allow_cross_node_tp") f.flags.allow_cross_node_tp = one_bool(key, v);
    else if (key == "allow_all") f.flags.allow_all = one_bool(key, v);
    else if (key == "uneven_pp") f.flags.uneven_pp = one_bool(key, v);
    else if (key == "max_micro_batch") {
      if (!v.IsScalar()) throw InputError(path, "$." + key, "must be an integer");
      f.max_micro_batch = int_of(path, v.Scalar(), "$." + key, 1, Limits::max_global_batch);
    } else return false;
    return true;
  };
  apply_job_keys(path, load_mapping(path), f.job, given, &job_keys, other);
  return f;
}

PlannerInputs search_file_inputs(const std::string& path, const SearchFile& f,
                                 const std::set<std::string>& given) {
  PlannerInputs in;
  try {
    in = planner_inputs(resolve_job(f.job), f.flags);
  } catch (const InputError& e) {
    if (e.path().rfind("--", 0) != 0 || given.count(recipe_key(e.path())) != 0) throw;
    throw InputError(path, "$." + recipe_key(e.path()), e.rule());
  }
  SearchOptions& o = in.options;
  o.tp_values = f.tp;
  o.pp_values = f.pp;
  o.mbs_values = f.mbs;
  o.sp_values = f.sp;
  if (!f.zero.empty()) o.zero = f.zero;
  if (!f.recompute.empty()) o.recompute = f.recompute;
  if (f.max_micro_batch > 0) o.max_micro_batch = f.max_micro_batch;
  return in;
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
