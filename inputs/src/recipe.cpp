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
    flag_file::rethrow_as_file_error(e, path, given);
  }
}

}  // namespace parallax
