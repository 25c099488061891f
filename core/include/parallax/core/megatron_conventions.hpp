#pragma once
// Megatron-LM's defaults and spellings that both directions of its command line use: the export
// writes them (export/src/megatron.cpp) and the importer reads them back
// (inputs/src/megatron_import.cpp). The plan's one-to-one flags are plan_fields.hpp's.
#include <cstdint>
#include <string_view>

#include "parallax/core/job_spec.hpp"
#include "parallax/core/model_spec.hpp"

namespace parallax::megatron {

// --hidden-dropout and --attention-dropout's default (megatron/training/arguments.py).
inline constexpr double kDropout = 0.1;

// Megatron-LM's RoPE (megatron/training/arguments.py): --rotary-base is an integer (default
// 10000); --use-rope-scaling applies Llama 3.x's scaling with --rope-scaling-factor (default 8)
// and the other three numbers fixed at Llama 3.1's (rotary_pos_embedding.py _apply_scaling:
// low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192).
inline constexpr double kRopeScalingFactor = 8;
inline constexpr double kRopeLowFreq = 1, kRopeHighFreq = 4;
inline constexpr int64_t kRopeOriginalMax = 8192;

// Megatron-LM's --fp8-recipe for the stack's fp8 scaling (megatron/training/arguments.py).
inline const char* fp8_recipe(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::delayed:
      return "delayed";
    case Fp8Scaling::current:
      return "tensorwise";
    case Fp8Scaling::mxfp8:
      return "mxfp8";
  }
  return "delayed";
}

// The model's shape as Megatron-LM's flags say it one to one (megatron/training/arguments.py):
// the flag, the ModelSpec field and the field's path in a model file, which a refusal of the
// imported model translates back to the flag.
struct ModelFlag {
  const char* flag;
  int64_t ModelSpec::*field;
  const char* json_path;
};

inline constexpr ModelFlag kModelFlags[] = {
    {"--num-layers", &ModelSpec::layers, "$.layers"},
    {"--hidden-size", &ModelSpec::hidden, "$.hidden"},
    {"--num-attention-heads", &ModelSpec::heads, "$.heads"},
    {"--num-query-groups", &ModelSpec::kv_heads, "$.kv_heads"},
    {"--kv-channels", &ModelSpec::kv_channels, "$.head_dim"},
    {"--seq-length", &ModelSpec::seq_len, "$.seq_len"},
    {"--ffn-hidden-size", &ModelSpec::ffn_hidden, "$.ffn_hidden"},
    {"--vocab-size", &ModelSpec::vocab, "$.vocab"},
};

// The entry of kModelFlags for `flag`, or nullptr.
inline const ModelFlag* model_flag(std::string_view flag) {
  for (const ModelFlag& f : kModelFlags)
    if (flag == f.flag) return &f;
  return nullptr;
}

// The flag that says `field` (nullptr for a field no flag says one to one).
inline const char* model_flag_of(int64_t ModelSpec::*field) {
  for (const ModelFlag& f : kModelFlags)
    if (f.field == field) return f.flag;
  return nullptr;
}

}  // namespace parallax::megatron
