#pragma once
// `parallax checkpoint export --hf`: a complete checkpoint as a Hugging Face model directory that
// transformers' GPT2LMHeadModel or LlamaForCausalLM .from_pretrained loads: config.json, and model.safetensors or
// model-0000K-of-0000N.safetensors shards with model.safetensors.index.json (transformers'
// layout and file names; shards split as huggingface_hub does, a tensor larger than the limit
// alone in its shard). Parameters only (Adam state is left out), word embeddings without the
// executor's vocabulary padding, under the names and in the layout checkpoints store them
// (checkpoint_layout.hpp): GPT-2's Conv1D (in, out), Llama's q/k/v and gate/up (out, in). The
// GPT-2 family (GeLU, learned positions, LayerNorm, multi-head attention) and the Llama family
// (SwiGLU, RoPE with Llama 3's scaling, RMSNorm, grouped-query attention, with or without
// biases); tied or untied embeddings. Any other mix is refused.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/model_spec.hpp"

namespace parallax::exec {

struct HfExportOptions {
  std::string checkpoint;  // a checkpoint directory (its newest complete step) or one step directory
  std::string out_dir;     // must not exist yet, or be an empty directory
  uint64_t max_shard_bytes = 5'000'000'000;  // transformers' save_pretrained default, "5GB"
  std::string dtype = "fp32";                // "fp32" (as trained) or "bf16" (round to nearest even)
};

struct HfExportSummary {
  std::string step_dir;
  int64_t step = 0;
  ModelSpec model;
  std::string architecture;        // "GPT2LMHeadModel" or "LlamaForCausalLM"
  std::vector<std::string> files;  // written into out_dir, config.json first
  int64_t tensors = 0;
  int64_t parameters = 0;
  uint64_t tensor_bytes = 0;       // the index file's total_size
  int64_t padding_rows_removed = 0;  // vocabulary padding rows dropped (per embedding matrix)
};

// Everything is checked before anything is written (the model recorded and exportable, every
// shard's checksum, every tensor present with its shape, nothing unexpected); the directory is
// built under a temporary name beside out_dir and renamed into place, so a failure leaves no
// partial output and an existing non-empty out_dir is never touched. Throws InputError (exit 2).
HfExportSummary export_hf(const HfExportOptions& o);

// config.json of a GPT-2 model as transformers' GPT2Config reads it.
std::string hf_gpt2_config(const ModelSpec& m, const std::string& dtype);

// max_shard_size as transformers' save_pretrained reads it (convert_file_size_to_int): "5GB"
// (10^9), "500MB", "10GiB" (2^30), "64KiB", units in any case, "5Gb" in bits (625,000,000 bytes);
// and a plain byte count ("4096"). Throws InputError naming `field` when the text is not one, or
// is 0.
// config.json of a Llama-family model as transformers' LlamaConfig reads it (rope_scaling with
// rope_type "llama3" when the model has it; attention_bias and mlp_bias from linear_bias).
std::string hf_llama_config(const ModelSpec& m, const std::string& dtype);

uint64_t parse_byte_size(const std::string& text, const std::string& field);

}  // namespace parallax::exec
