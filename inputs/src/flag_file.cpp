#include "flag_file.hpp"

#include <map>

#include "parallax/core/plan_fields.hpp"
#include "parallax/inputs/recipe.hpp"

namespace parallax::flag_file {
namespace {

using Setter = std::function<void(PlanOptions&, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  // The job's options (job_options()) and the plan's fields that have a flag of their own and
  // take a value (plan_fields.hpp), by recipe key.
  static const std::map<std::string, Setter> s = [] {
    std::map<std::string, Setter> all;
    for (const JobOption& j : job_options()) {
      const JobOption* option = &j;  // job_options() lives as long as the program
      all.emplace(recipe_key(j.flag), [option](PlanOptions& o, const std::string& v) { option->text(o) = v; });
    }
    for (const PlanField& f : plan_fields()) {
      if (f.derived || f.type == FieldType::on_off) continue;
      const std::string key = f.key;
      all.emplace(recipe_key(f.flag), [key](PlanOptions& o, const std::string& v) { o.value(key) = v; });
    }
    return all;
  }();
  return s;
}

// The flags that take no value, true or false in a recipe: the plan's switches, by recipe key,
// and their JSON keys.
const std::map<std::string, std::string>& switches() {
  static const std::map<std::string, std::string> s = [] {
    std::map<std::string, std::string> keys;
    for (const PlanField& f : plan_fields())
      if (f.type == FieldType::on_off) keys.emplace(recipe_key(f.flag), f.key);
    return keys;
  }();
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
      o.value(sw->second) = v.Scalar();
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
