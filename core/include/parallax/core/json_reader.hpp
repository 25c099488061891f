#pragma once
// Strict reading of one JSON object: every access names its JSON path, every value is range-checked,
// and finish() rejects keys nobody asked for. All failures throw InputError.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace parallax {

class JsonObjectReader {
 public:
  // Throws InputError(source, path, "must be an object") when j is not an object.
  JsonObjectReader(const nlohmann::json& j, std::string source, std::string path = "$");
  // The reader keeps a reference to j, so a temporary would dangle: keep the JSON in a variable.
  JsonObjectReader(nlohmann::json&& j, std::string source, std::string path = "$") = delete;

  // Required values. Numbers must be finite and within [min, max]; integers must be integral.
  int64_t get_int(const std::string& key, int64_t min, int64_t max);
  double get_number(const std::string& key, double min, double max);
  bool get_bool(const std::string& key);
  std::string get_string(const std::string& key);
  // One of the allowed spellings (a braced list, or one built elsewhere, e.g. every value of an
  // enum); the error lists them.
  std::string get_enum(const std::string& key, const std::vector<const char*>& allowed);

  // Optional values: the fallback when the key is absent (null is not absent: it is a type error).
  int64_t get_int_or(const std::string& key, int64_t min, int64_t max, int64_t fallback);
  double get_number_or(const std::string& key, double min, double max, double fallback);
  bool get_bool_or(const std::string& key, bool fallback);
  std::string get_string_or(const std::string& key, std::string fallback);
  std::string get_enum_or(const std::string& key, const std::vector<const char*>& allowed,
                          std::string fallback);

  // Non-empty arrays without repeats: of allowed spellings, or of integers in [min, max].
  std::vector<std::string> get_enum_list(const std::string& key,
                                         const std::vector<const char*>& allowed);
  std::vector<int64_t> get_int_list(const std::string& key, int64_t min, int64_t max);

  bool has(const std::string& key) const;
  // A nested object, read by its own reader (path extended); marks the key as used.
  JsonObjectReader object(const std::string& key);
  // The raw value (marks it used); throws when missing.
  const nlohmann::json& raw(const std::string& key);
  // The raw value, which must be an array (marks it used); throws when missing or not an array.
  const nlohmann::json& array(const std::string& key);
  // Marks a key as known without reading it (e.g. documentation fields).
  void ignore(const std::string& key);

  // Throws on the first key (alphabetical: nlohmann::json sorts keys) never read or ignored.
  void finish() const;

  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }  // of this object, e.g. "$.runs[3].model"
  std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& rule) const;

 private:
  const nlohmann::json& value(const std::string& key);

  const nlohmann::json& j_;
  std::string source_;
  std::string path_;
  std::set<std::string> used_;
};

// Parses text as JSON; a syntax error becomes InputError(source, "$", "malformed JSON: ...").
nlohmann::json parse_json_text(const std::string& text, const std::string& source);
// Reads and parses a file; a missing/unreadable file is InputError(path, "$", "cannot read file").
nlohmann::json read_json_file(const std::string& path);

}  // namespace parallax
