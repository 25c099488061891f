#pragma once
// A Hydra (OmegaConf) YAML config as NeMo 1.x writes its training configs, read key by key:
// dotted keys ("model.num_layers"), each value with its interpolations resolved where they name
// another key of the same file. Internal to parallax::inputs.
//
// Resolved: ${model.encoder_seq_length} (from the top), ${.hidden_size} (the key's own mapping;
// each further dot one mapping up), ${training.model.x} (the NeMo-Framework-Launcher's configs
// name their own keys under `training`, the group they are composed into), and NeMo's
// ${multiply:a, b} resolver on integers. Any other (${oc.env:X}, ${data_dir}, a key the file does
// not have) is refused with the key being read, when it is read: keys nobody reads may hold them.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

namespace parallax::hydra {

class Config {
 public:
  Config(std::string path, YAML::Node root);

  // The scalar at `key`, resolved; nullopt when the key is absent or null. InputError(path,
  // "$.key", rule) for a mapping or list, Hydra's mandatory "???", or an interpolation that
  // cannot be resolved.
  std::optional<std::string> scalar(const std::string& key) const;
  // Whether `key` is a mapping of the file.
  bool is_mapping(const std::string& key) const;
  const std::string& path() const { return path_; }

 private:
  YAML::Node find(const std::string& key) const;
  std::string resolve(const std::string& text, const std::string& key, const std::string& at,
                      int depth) const;
  std::string interpolation(const std::string& body, const std::string& key, const std::string& at,
                            int depth) const;

  std::string path_;
  YAML::Node root_;
};

}  // namespace parallax::hydra
