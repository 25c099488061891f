#include "parallax/core/json_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <system_error>
#include <vector>

#include "json_text.hpp"
#include "parallax/core/error.hpp"

namespace parallax {

using nlohmann::json;

// ---- number and value formatting for messages --------------------------------------------------

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // Whole numbers print without ".0" so bounds read like the rule ("<= 1024", not "<= 1024.0").
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<int64_t>(x));
  return json(x).dump();  // shortest text that reads back to the same double
}

std::string describe_value(const json& v) {
  if (v.is_number_float()) return format_number(v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_string()) {
    // Long strings would drown the rule; the start is enough to recognise the value.
    std::string s = v.get<std::string>();
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return json(s).dump();
  }
  return v.type_name();
}

std::string json_path_append(const std::string& path, const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  return plain ? path + "." + key : path + "[" + json(key).dump() + "]";
}

namespace {

// ---- typed conversions, each failing with the rule the value broke -----------------------------

template <class Reader>
double finite_number(const Reader& r, const std::string& key, const json& v,
                     const char* expected) {
  if (!v.is_number())
    r.fail(key, std::string("must be ") + expected + " (got " + v.type_name() + ")");
  const double x = v.get<double>();
  if (!std::isfinite(x)) r.fail(key, "must be finite (got " + format_number(x) + ")");
  return x;
}

template <class Reader>
int64_t int_value(const Reader& r, const std::string& key, const json& v, int64_t min,
                  int64_t max) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const auto x = v.get<int64_t>();
    if (x < min)
      r.fail(key, "must be an integer >= " + std::to_string(min) + " (got " + v.dump() + ")");
    if (x > max)
      r.fail(key, "must be an integer <= " + std::to_string(max) + " (got " + v.dump() + ")");
    return x;
  }
  if (v.is_number_unsigned()) {
    // Above INT64_MAX cannot be converted; every such value is above any max anyway.
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      r.fail(key, "must be an integer <= " + std::to_string(max) + " (got " + v.dump() + ")");
    const auto x = static_cast<int64_t>(u);
    if (x < min)
      r.fail(key, "must be an integer >= " + std::to_string(min) + " (got " + v.dump() + ")");
    return x;
  }
  // A float such as 1e3 is accepted when whole; compare as double before converting (no UB).
  const double d = finite_number(r, key, v, "an integer");
  if (d != std::floor(d)) r.fail(key, "must be an integer (got " + format_number(d) + ")");
  if (d < static_cast<double>(min))
    r.fail(key, "must be an integer >= " + std::to_string(min) + " (got " + format_number(d) + ")");
  if (d > static_cast<double>(max))
    r.fail(key, "must be an integer <= " + std::to_string(max) + " (got " + format_number(d) + ")");
  return static_cast<int64_t>(d);
}

double number_value(const JsonObjectReader& r, const std::string& key, const json& v, double min,
                    double max) {
  const double x = finite_number(r, key, v, "a number");
  if (x < min) r.fail(key, "must be >= " + format_number(min) + " (got " + format_number(x) + ")");
  if (x > max) r.fail(key, "must be <= " + format_number(max) + " (got " + format_number(x) + ")");
  return x;
}

template <class Reader>
std::string enum_value(const Reader& r, const std::string& key, const json& v,
                       const std::vector<const char*>& allowed) {
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
  if (!v.is_string()) r.fail(key, "must be one of " + list + " (got " + v.type_name() + ")");
  const auto& s = v.get_ref<const std::string&>();
  for (const char* a : allowed)
    if (s == a) return s;
  r.fail(key, "must be one of " + list + " (got " + describe_value(v) + ")");
}

// Levenshtein distance, to suggest the key a typo was meant to be.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

// ---- JsonObjectReader --------------------------------------------------------------------------

JsonObjectReader::JsonObjectReader(const json& j, std::string source, std::string path)
    : j_(j), source_(std::move(source)), path_(std::move(path)) {
  if (!j_.is_object())
    throw InputError(source_, path_, std::string("must be an object (got ") + j_.type_name() + ")");
}

std::string JsonObjectReader::path_of(const std::string& key) const {
  return json_path_append(path_, key);
}

void JsonObjectReader::fail(const std::string& key, const std::string& rule) const {
  throw InputError(source_, path_of(key), rule);
}

bool JsonObjectReader::has(const std::string& key) const { return j_.contains(key); }

const json& JsonObjectReader::value(const std::string& key) {
  used_.insert(key);
  const auto it = j_.find(key);
  if (it == j_.end()) fail(key, "is required");
  return *it;
}

int64_t JsonObjectReader::get_int(const std::string& key, int64_t min, int64_t max) {
  return int_value(*this, key, value(key), min, max);
}

double JsonObjectReader::get_number(const std::string& key, double min, double max) {
  return number_value(*this, key, value(key), min, max);
}

bool JsonObjectReader::get_bool(const std::string& key) {
  const json& v = value(key);
  if (!v.is_boolean()) fail(key, std::string("must be a boolean (got ") + v.type_name() + ")");
  return v.get<bool>();
}

std::string JsonObjectReader::get_string(const std::string& key) {
  const json& v = value(key);
  if (!v.is_string()) fail(key, std::string("must be a string (got ") + v.type_name() + ")");
  return v.get<std::string>();
}

std::string JsonObjectReader::get_enum(const std::string& key,
                                       const std::vector<const char*>& allowed) {
  return enum_value(*this, key, value(key), allowed);
}

namespace {

// Fails at one element of an array: "$.key[i]".
struct ElementFailer {
  std::string source, path;
  [[noreturn]] void fail(const std::string& /*key*/, const std::string& rule) const {
    throw InputError(source, path, rule);
  }
};

// The array under `key`, non-empty, without repeats; each element read by `one`.
template <class T, class F>
std::vector<T> list_value(JsonObjectReader& r, const std::string& key, const json& v, F one) {
  if (!v.is_array() || v.empty())
    r.fail(key, std::string("must be a non-empty array (got ") + describe_value(v) + ")");
  std::vector<T> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const ElementFailer at{r.source(), r.path_of(key) + "[" + std::to_string(i) + "]"};
    T x = one(at, v[i]);
    for (const T& y : out)
      if (y == x) at.fail(key, "repeats an earlier entry (got " + describe_value(v[i]) + ")");
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

std::vector<std::string> JsonObjectReader::get_enum_list(const std::string& key,
                                                         const std::vector<const char*>& allowed) {
  return list_value<std::string>(*this, key, value(key), [&](const ElementFailer& at, const json& e) {
    return enum_value(at, key, e, allowed);
  });
}

std::vector<int64_t> JsonObjectReader::get_int_list(const std::string& key, int64_t min, int64_t max) {
  return list_value<int64_t>(*this, key, value(key), [&](const ElementFailer& at, const json& e) {
    return int_value(at, key, e, min, max);
  });
}

// Optional getters record the key as known even when absent, so finish() can suggest it for a typo.
int64_t JsonObjectReader::get_int_or(const std::string& key, int64_t min, int64_t max,
                                     int64_t fallback) {
  used_.insert(key);
  return has(key) ? get_int(key, min, max) : fallback;
}

double JsonObjectReader::get_number_or(const std::string& key, double min, double max,
                                       double fallback) {
  used_.insert(key);
  return has(key) ? get_number(key, min, max) : fallback;
}

bool JsonObjectReader::get_bool_or(const std::string& key, bool fallback) {
  used_.insert(key);
  return has(key) ? get_bool(key) : fallback;
}

std::string JsonObjectReader::get_string_or(const std::string& key, std::string fallback) {
  used_.insert(key);
  return has(key) ? get_string(key) : fallback;
}

std::string JsonObjectReader::get_enum_or(const std::string& key,
                                          const std::vector<const char*>& allowed,
                                          std::string fallback) {
  used_.insert(key);
  return has(key) ? get_enum(key, allowed) : fallback;
}

JsonObjectReader JsonObjectReader::object(const std::string& key) {
  return JsonObjectReader(value(key), source_, path_of(key));
}

const json& JsonObjectReader::raw(const std::string& key) { return value(key); }

const json& JsonObjectReader::array(const std::string& key) {
  const json& a = value(key);
  if (!a.is_array()) fail(key, "must be an array");
  return a;
}

void JsonObjectReader::ignore(const std::string& key) { used_.insert(key); }

void JsonObjectReader::finish() const {
  // nlohmann::json keeps object keys sorted, so "document order" here is key order.
  for (const auto& item : j_.items()) {
    const std::string& key = item.key();
    if (used_.count(key) != 0) continue;
    std::string rule = "unknown key " + json(key).dump();
    const std::string* best = nullptr;
    size_t best_distance = 3;  // suggest only close misspellings
    for (const std::string& known : used_) {
      const size_t d = edit_distance(key, known);
      if (d < best_distance && d < known.size()) best = &known, best_distance = d;
    }
    if (best != nullptr) rule += " (did you mean " + json(*best).dump() + "?)";
    fail(key, rule);
  }
}

// ---- parsing -----------------------------------------------------------------------------------

namespace {

// Follows the parser through the document so that errors nlohmann reports without a location
// (a number too large for a double) and duplicate keys, which nlohmann silently merges, can be
// reported with their JSON path.
class ParseTracker {
 public:
  explicit ParseTracker(const std::string& source) : source_(source) {}

  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({false, {}, 0, {}}); break;
      case json::parse_event_t::array_start: frames_.push_back({true, {}, 0, {}}); break;
      case json::parse_event_t::key: on_key(parsed.get<std::string>()); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        on_value_done();
        break;
      case json::parse_event_t::value: on_value_done(); break;
    }
    return true;
  }

  std::string path() const {
    std::string p = "$";
    for (const Frame& f : frames_)
      p = f.is_array ? p + "[" + std::to_string(f.index) + "]"
                     : (f.has_key ? json_path_append(p, f.key) : p);
    return p;
  }

 private:
  struct Frame {
    bool is_array;
    std::string key;  // key whose value is being parsed (objects)
    size_t index;     // element being parsed (arrays)
    std::set<std::string> seen;
    bool has_key = false;
  };

  void on_key(const std::string& key) {
    Frame& f = frames_.back();
    f.key = key;
    f.has_key = true;
    if (!f.seen.insert(key).second)
      throw InputError(source_, path(), "duplicate key " + json(key).dump());
  }

  void on_value_done() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  const std::string& source_;
  std::vector<Frame> frames_;
};

// nlohmann prefixes messages with "[json.exception.parse_error.101] "; users need only the rest.
std::string strip_exception_id(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const auto end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

// "[json.exception.parse_error.101] parse error at line 1, column 15: syntax error ..." becomes
// " (line 1, column 15): syntax error ...", to follow "malformed JSON at byte 15".
std::string describe_parse_error(const std::string& what) {
  const std::string rest = strip_exception_id(what);
  const std::string prefix = "parse error at ";
  const auto colon = rest.find(": ");
  if (rest.rfind(prefix, 0) != 0 || colon == std::string::npos) return ": " + rest;
  return " (" + rest.substr(prefix.size(), colon - prefix.size()) + ")" + rest.substr(colon);
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& source) {
  ParseTracker tracker(source);
  const json::parser_callback_t callback = [&tracker](int /*depth*/, json::parse_event_t event,
                                                      json& parsed) {
    return tracker.on_event(event, parsed);
  };
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    throw InputError(
        source, "$",
        "malformed JSON at byte " + std::to_string(e.byte) + describe_parse_error(e.what()));
  } catch (const json::out_of_range& e) {
    // 406: a number such as 1e400 overflows a double; JSON has no infinity, so this is the
    // non-finite case.
    if (e.id == 406)
      throw InputError(source, tracker.path(),
                       "must be finite (" + strip_exception_id(e.what()) + ")");
    throw InputError(source, tracker.path(), "malformed JSON: " + strip_exception_id(e.what()));
  } catch (const json::exception& e) {
    throw InputError(source, tracker.path(), "malformed JSON: " + strip_exception_id(e.what()));
  }
}

json read_json_file(const std::string& path) {
  const auto cannot_read = [&path](int err) {
    return InputError(path, "$", "cannot read file: " + std::generic_category().message(err));
  };
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) throw cannot_read(errno);
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
  // A directory opens fine on Linux and fails on the first read (EISDIR).
  if (std::ferror(file.get())) throw cannot_read(errno);
  return parse_json_text(text, path);
}

}  // namespace parallax
