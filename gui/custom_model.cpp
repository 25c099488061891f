#include "custom_model.hpp"

#include <nlohmann/json.hpp>

#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax::gui {
namespace {

// The JSON value a model file would hold had the user typed `text` there: a number when the text
// is one, else the text as a string (which the reader then rejects with its type rule).
nlohmann::json value_of(const std::string& text) {
  nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  if (v.is_number()) return v;
  return text;
}

}  // namespace

ModelShapeFields shape_fields(const ModelSpec& m) {
  return {std::to_string(m.layers),     std::to_string(m.hidden),  std::to_string(m.heads),
          std::to_string(m.ffn_hidden), std::to_string(m.seq_len), std::to_string(m.vocab)};
}

ModelSpec custom_model(const ModelShapeFields& f, const ModelSpec& base) {
  nlohmann::json j = to_json(base);
  j["name"] = "custom";
  j["source"] = "parallax-gui: the shape of " + base.name + " with fields changed by hand";
  j["layers"] = value_of(f.layers);
  j["hidden"] = value_of(f.hidden);
  j["heads"] = value_of(f.heads);
  j["ffn_hidden"] = value_of(f.ffn_hidden);
  j["seq_len"] = value_of(f.seq_len);
  j["vocab"] = value_of(f.vocab);
  if (base.kv_heads == base.heads) j.erase("kv_heads");
  JsonObjectReader r(j, kCustomModelSource);
  return read_model(r);
}

}  // namespace parallax::gui
