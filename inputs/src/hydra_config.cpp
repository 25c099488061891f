#include "hydra_config.hpp"

#include <vector>

#include "parallax/core/error.hpp"

namespace parallax::hydra {
namespace {

constexpr int kMaxDepth = 16;

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= key.size() && !key.empty()) {
    const size_t dot = key.find('.', from);
    out.push_back(key.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// The '}' closing the "${" at `open`, counting the interpolations nested inside; npos if none.
size_t closing(const std::string& t, size_t open) {
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (t.compare(i, 2, "${") == 0) {
      ++depth;
      ++i;
    } else if (t[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// A resolver's arguments: split at the commas outside nested interpolations.
std::vector<std::string> arguments(const std::string& s) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

Config::Config(std::string path, YAML::Node root) : path_(std::move(path)), root_(std::move(root)) {}

YAML::Node Config::find(const std::string& key) const {
  YAML::Node at = root_;
  for (const std::string& seg : split_dots(key)) {
    if (!at.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& map = at;  // const: looking a key up must not add it
    const YAML::Node child = map[seg];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    at.reset(child);
  }
  return at;
}

bool Config::is_mapping(const std::string& key) const { return find(key).IsMap(); }

std::optional<std::string> Config::scalar(const std::string& key) const {
  const YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  if (!n.IsScalar()) throw InputError(path_, "$." + key, "must be a single value, not a mapping or a list");
  if (n.Scalar() == "???")
    throw InputError(path_, "$." + key, "is ??? (Hydra's mandatory value): give it in the file");
  return resolve(n.Scalar(), key, key, 0);
}

std::string Config::resolve(const std::string& text, const std::string& key, const std::string& at,
                            int depth) const {
  if (depth > kMaxDepth)
    throw InputError(path_, "$." + key,
                     "its interpolations nest more than " + std::to_string(kMaxDepth) + " deep (a cycle?)");
  std::string out;
  size_t from = 0;
  for (size_t open = text.find("${"); open != std::string::npos; open = text.find("${", from)) {
    const size_t close = closing(text, open);
    if (close == std::string::npos)
      throw InputError(path_, "$." + key, "has an unclosed interpolation (\"" + text + "\")");
    out += text.substr(from, open - from);
    out += interpolation(text.substr(open + 2, close - open - 2), key, at, depth + 1);
    from = close + 1;
  }
  return out + text.substr(from);
}

std::string Config::interpolation(const std::string& body, const std::string& key, const std::string& at,
                                  int depth) const {
  const std::string b = trim(body);
  const auto refuse = [&](const std::string& why) {
    return InputError(path_, "$." + key, "cannot resolve ${" + b + "}: " + why);
  };
  if (b.rfind("multiply:", 0) == 0) {  // NeMo's resolver (OmegaConf.register_new_resolver)
    const std::vector<std::string> args = arguments(b.substr(9));
    if (args.size() != 2) throw refuse("multiply takes two integers");
    long long product = 1;
    for (const std::string& a : args) {
      const std::string v = resolve(trim(a), key, at, depth);
      long long x = 0;
      size_t used = 0;
      try {
        x = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != v.size() || x < 0 || x > (1LL << 40))
        throw refuse("multiply takes integers in [0, 2^40] (got \"" + v + "\")");
      product *= x;
    }
    return std::to_string(product);
  }
  if (b.empty() || b.find(':') != std::string::npos)
    throw refuse("Parallax resolves only ${key} of this file and ${multiply:a, b}");
  std::string target = b;
  if (b[0] == '.') {  // relative: one dot is the key's own mapping, each further dot one up
    const size_t dots = b.find_first_not_of('.');
    std::vector<std::string> segs = split_dots(at);
    if (dots == std::string::npos || dots > segs.size()) throw refuse("names no key of the file");
    segs.resize(segs.size() - dots);
    target.clear();
    for (const std::string& s : segs) target += s + ".";
    target += b.substr(dots);
  } else if (b.rfind("training.", 0) == 0 && !find(b).IsDefined()) {
    target = b.substr(9);  // the launcher composes a training config under `training`
  }
  const YAML::Node n = find(target);
  if (!n.IsDefined()) throw refuse("the file has no key " + target);
  if (!n.IsScalar() || n.Scalar() == "???")
    throw refuse(target + " is " + (n.IsNull() ? "null" : n.IsScalar() ? "??? (mandatory)" : "not a single value"));
  return resolve(n.Scalar(), key, target, depth);
}

}  // namespace parallax::hydra
