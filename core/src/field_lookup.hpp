#pragma once
// Lookups in a field table (plan_fields.hpp, job_fields.hpp): by JSON key, its position, by
// Megatron-LM flag. Internal to parallax::core.
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace parallax::field_lookup {

// The field at `key`, or nullptr.
template <class Field>
const Field* by_key(std::span<const Field> fields, std::string_view key) {
  for (const Field& f : fields)
    if (key == f.key) return &f;
  return nullptr;
}

// The position of the field at `key`; std::out_of_range ("no <what> field <key>") for none.
template <class Field>
size_t index_of(std::span<const Field> fields, std::string_view key, const char* what) {
  for (size_t i = 0; i < fields.size(); ++i)
    if (key == fields[i].key) return i;
  throw std::out_of_range(std::string("no ") + what + " field " + std::string(key));
}

// The field whose Megatron-LM flag is `flag`, or nullptr.
template <class Field>
const Field* by_megatron_flag(std::span<const Field> fields, std::string_view flag) {
  for (const Field& f : fields)
    if (f.megatron_flag != nullptr && flag == f.megatron_flag) return &f;
  return nullptr;
}

}  // namespace parallax::field_lookup
