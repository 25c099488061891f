#pragma once
// Megatron-LM command-line arguments for a plan (the exact argument names of current Megatron-LM's
// megatron/training/arguments.py); parallax/inputs/megatron_import.hpp reads them back, so a round
// trip is checkable. Never emits the derived --virtual-pipeline-model-parallel-size.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/plan_file.hpp"

namespace parallax {

// Throws InputError("export", "--format", reason) for what Megatron-LM cannot run
// (GPipe, ALiBi positions, unequal virtual stages) and what the plan's stack cannot run
// (validate_plan, its capability table). ZeRO-2/3 run as Megatron FSDP.
// What the run trains on, which the plan does not say: a data prefix (empty: Megatron's mock
// dataset, random tokens, with its NullTokenizer) and the Hugging Face tokenizer it was made with
// (needed with data).
struct MegatronData {
  std::string data_path;
  std::string tokenizer_model;
  // > 0: a benchmark of this many iterations, each logged (LaunchOptions::benchmark_iters).
  int64_t benchmark_iters = 0;
};

std::vector<std::string> megatron_args(const PlanFile& f, const MegatronData& data = {});

// One argument per line with shell continuations, ready to paste after pretrain_gpt.py.
std::string megatron_args_text(const PlanFile& f, const MegatronData& data = {});
std::string args_text(const std::vector<std::string>& args);

}  // namespace parallax
