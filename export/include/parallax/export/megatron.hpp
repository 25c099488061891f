#pragma once
// Megatron-LM command-line arguments for a plan (the exact argument names of current Megatron-LM's
// megatron/training/arguments.py), and the reverse: arguments back to a plan, so a round trip is
// checkable. Never emits the derived --virtual-pipeline-model-parallel-size.
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
};

std::vector<std::string> megatron_args(const PlanFile& f, const MegatronData& data = {});

// One argument per line with shell continuations, ready to paste after pretrain_gpt.py.
std::string megatron_args_text(const PlanFile& f, const MegatronData& data = {});
std::string args_text(const std::vector<std::string>& args);

// Parses arguments (as megatron_args emits them; backslashes and newlines are ignored) back into
// the model shape, job batch/dtype and parallel settings. Cluster and GPU count are not in the
// arguments: they are taken from `base`.
PlanFile parse_megatron_args(const std::vector<std::string>& args, const PlanFile& base);
std::vector<std::string> split_args(const std::string& text);

// A command line as users have it (a launch script with bash arrays of flags and comments, as
// Megatron-LM's examples are written, or the arguments alone): every --flag is read as above,
// except that arguments Parallax does not model and that do not change the plan (--save,
// --log-interval, torchrun's own) are skipped with their values and listed in `ignored`, and
// other words are skipped. Arguments that change the plan in ways the cost model cannot express
// (context or expert parallelism) are refused; the model's shape and
// the batch must all be in the text (--vocab-file alone means GPT-2's 50,257 tokens).
// Of the skipped arguments, those that do change the iteration time in Megatron-LM but that the
// cost model does not cost (kNotCosted: the EP all-to-all overlap) are listed in `not_costed`
// instead, so that a prediction of the command can say it leaves them out.
struct MegatronImport {
  PlanFile file;
  std::vector<std::string> ignored;
  std::vector<std::string> not_costed;
};
// Megatron-LM arguments that change the iteration time and that Parallax does not cost yet:
// --overlap-moe-expert-parallel-comm (and --delay-wgrad-compute, which only works with it),
// Megatron-Core's EP all-to-all overlap (docs/moe.md, "The EP all-to-all overlap, costed and not
// landed").
inline constexpr const char* kNotCosted[] = {"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"};
MegatronImport import_megatron_command(const std::string& text, const PlanFile& base);
// The same over arguments already split (one word each), as other launch formats translate to
// them (inputs' nemo_config.hpp): the same defaults, refusals and needed shape.
MegatronImport import_megatron_args(const std::vector<std::string>& args, const PlanFile& base);

}  // namespace parallax
