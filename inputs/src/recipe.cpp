#include "parallax/inputs/recipe.hpp"

#include "flag_file.hpp"
#include "parallax/core/error.hpp"

namespace parallax {

std::string recipe_key(const std::string& flag) {
  std::string k = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
  for (char& c : k) c = c == '-' ? '_' : c;
  return k == "framework" ? "stack" : k;
}

PlanOptions read_recipe(const std::string& path, PlanOptions o, const std::set<std::string>& given) {
  flag_file::apply_job_keys(path, flag_file::load_mapping(path), o, given, nullptr, {});
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
