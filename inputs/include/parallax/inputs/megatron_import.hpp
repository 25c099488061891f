#pragma once
// Megatron-LM command lines back into a plan file: what `export --format megatron` writes
// (parallax/export/megatron.hpp), and launch scripts as users have them.
#include <string>
#include <vector>

#include "parallax/core/plan_file.hpp"

namespace parallax {

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
