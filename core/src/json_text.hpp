#pragma once
// Private to core: how values, numbers and JSON paths are spelled inside error messages.
#include <nlohmann/json.hpp>
#include <string>

namespace parallax {

// 1024 -> "1024", 2.5 -> "2.5", 1e30 -> "1e+30", inf -> "inf".
std::string format_number(double x);
// A value as quoted in "(got ...)": numbers and strings by value, other types by type name.
std::string describe_value(const nlohmann::json& v);
// "$.plan" + "tp" -> "$.plan.tp"; keys that are not identifiers get brackets: $["a b"].
std::string json_path_append(const std::string& path, const std::string& key);

}  // namespace parallax
