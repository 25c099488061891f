#pragma once
// The GUI's custom model: the six numbers a what-if changes most (layers, hidden, heads, FFN,
// sequence length, vocabulary) over a preset that supplies the rest. The fields go through core's
// strict model reader, so a bad value gets the message a model JSON file with it would get
// (`parallax plan --model FILE`), with "custom model" in place of the file name.
#include <string>

#include "parallax/core/model_spec.hpp"

namespace parallax::gui {

inline constexpr const char* kCustomModelSource = "custom model";

struct ModelShapeFields {
  std::string layers;
  std::string hidden;
  std::string heads;
  std::string ffn_hidden;
  std::string seq_len;
  std::string vocab;
  bool operator==(const ModelShapeFields&) const = default;
};

ModelShapeFields shape_fields(const ModelSpec& m);

// Throws InputError(kCustomModelSource, "$.<field>", rule). GQA is kept only when the base has it
// (kv_heads != heads); otherwise kv_heads follows heads.
ModelSpec custom_model(const ModelShapeFields& f, const ModelSpec& base);

}  // namespace parallax::gui
