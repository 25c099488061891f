#pragma once
// A NeMo 1.x Megatron GPT training config (the Hydra YAML of NeMo's
// examples/nlp/language_modeling/conf/megatron_gpt_config.yaml, and the NeMo-Framework-Launcher's
// launcher_scripts/conf/training/gpt3/*.yaml and llama/*.yaml), translated into the Megatron-LM
// arguments that say the same, so that one importer (megatron_import.hpp's import_megatron_args) builds the
// model, job and plan of both: the same defaults (FFN 4h, GPT-2's 50,257 tokens), the same
// refusals (context or expert parallelism above 1, mixture of experts).
//
// Read: trainer.num_nodes, devices, precision (16, 16-mixed, bf16, bf16-mixed, 32), max_steps;
// model.tensor/pipeline/virtual_pipeline_model_parallel_size, context_parallel_size,
// expert_model_parallel_size, sequence_parallel, micro/global_batch_size, encoder_seq_length (or
// seq_length, or data.seq_length), num_layers, hidden_size, ffn_hidden_size, num_attention_heads,
// num_query_groups, kv_channels, max_position_embeddings, position_embedding_type,
// activations_checkpoint_granularity/method/num_layers, optim.name, bias, activation,
// normalization, share_embeddings_and_output_weights, hidden/attention_dropout, fp8, fp8_e4m3,
// fsdp, num_moe_experts, override_vocab_size, tokenizer.library/type. Other keys are not read
// (they do not change the plan, or the cost model has no term for them yet).
#include <map>
#include <string>
#include <vector>

#include "parallax/core/error.hpp"

namespace parallax {

struct NemoConfig {
  std::string path;
  std::string name;        // run.name, else name, else "nemo-config"
  int64_t nodes = 0;       // trainer.num_nodes
  int64_t devices = 0;     // trainer.devices: GPUs per node
  std::vector<std::string> megatron_args;    // the Megatron-LM arguments saying the same
  std::map<std::string, std::string> key_of;  // a Megatron argument -> the config's key ("$.model.num_layers")
};

// Whether `path` is a NeMo training config: a YAML mapping with `trainer` and `model` mappings.
// False for a file that cannot be read or parsed (the recipe reader names the error).
bool is_nemo_config(const std::string& path);

// Throws InputError(path, "$.key", rule) for a value the translation cannot take: a missing
// shape or batch key, an unknown precision, activation, normalization or position embedding, a
// tokenizer whose vocabulary the file does not give (model.override_vocab_size then), tp x pp
// not dividing the GPUs, a global batch the data-parallel micro-batches do not divide, torch
// FSDP, or an interpolation other than the ones hydra_config resolves.
NemoConfig read_nemo_config(const std::string& path);

// An error of the Megatron-LM import of `c.megatron_args` (source "megatron args") or of the
// --nodes flag trainer.num_nodes sets, as the config's: its key instead of the flag.
// Others are rethrown as they are.
[[noreturn]] void rethrow_as_nemo_error(const InputError& e, const NemoConfig& c);

}  // namespace parallax
