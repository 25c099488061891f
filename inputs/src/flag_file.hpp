#pragma once
// Files of flag values (recipes, search files): YAML read into the flags' options, each value
// checked where it is, errors naming the file and the key. Internal to parallax::inputs.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/inputs/job_flags.hpp"

namespace parallax::flag_file {

// The document of `path`, a mapping; InputError for an unreadable file or malformed YAML.
YAML::Node load_mapping(const std::string& path);

int64_t int_of(const std::string& path, const std::string& text, const std::string& at, int64_t min,
               int64_t max);
bool bool_of(const std::string& path, const std::string& text, const std::string& at);

// Applies the job keys of `doc` (those `job_keys` allows; all the flags' keys when null) to o,
// skipping the keys in `given`; `other` reads the rest and says whether it knew the key.
// A flag's error from resolving the file's values, as the file's: the key instead of the flag
// ("--global-batch" -> "$.global_batch"). Errors of presets or files the values name, and of flags
// typed on the command line (`given`), are rethrown as they are.
[[noreturn]] void rethrow_as_file_error(const InputError& e, const std::string& path,
                                        const std::set<std::string>& given);

void apply_job_keys(const std::string& path, const YAML::Node& doc, PlanOptions& o,
                    const std::set<std::string>& given, const std::set<std::string>* job_keys,
                    const std::function<bool(const std::string&, const YAML::Node&)>& other);

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

}  // namespace parallax::flag_file
