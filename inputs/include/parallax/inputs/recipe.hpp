#pragma once
// A recipe: a job and its plan written down once, as YAML (or JSON, which YAML reads) with the
// flags' names as keys, so a setup can be kept in a file, evaluated and exported back:
//
//   model: llama2-70b          # preset name or model JSON file, as --model
//   cluster: dgx-h100-superpod
//   gpus: 512
//   global_batch: 1024
//   stack: megatron-core
//   tp: 8
//   pp: 4
//   sp: true
//   recompute: selective
//   zero: 1
//
// Keys: model, cluster, nodes, gpus, global_batch, tp, pp, vpp, mbs, sp, recompute,
// recompute_layers, zero, first_stage_layers, last_stage_layers, schedule, order, dtype,
// bytes_per_param, stack, attention_kernel, tokens, price, profile. A key left out takes the
// flag's default. Errors name the file and the key ("$.tp").
#include <set>
#include <string>

#include <vector>

#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/search_flags.hpp"

namespace parallax {

// The recipe's values as the flags would give them, over `base`; the keys in `given` (flags typed
// on the command line, by recipe key) keep base's value: a typed flag wins over the file. Throws
// InputError(path, "$.key", rule) for an unreadable file, malformed YAML, a key that is not a
// flag or a value that is not a scalar.
PlanOptions read_recipe(const std::string& path, PlanOptions base,
                        const std::set<std::string>& given = {});
// The recipe key of a flag: "--global-batch" -> "global_batch", "--framework" -> "stack".
std::string recipe_key(const std::string& flag);

// A search file (plan --search): the job as a recipe gives it (model, cluster, nodes, gpus,
// global_batch, stack, dtype, bytes_per_param, attention_kernel, tokens, price, profile, order)
// and what to search, each a value or a list: tp, pp, mbs (micro-batch sizes), recompute, zero,
// sp (true/false), cp and ep (only 1 until context and expert parallelism are modelled); and
// the constraints allow_cross_node_tp, allow_all, uneven_pp (true/false) and max_micro_batch.
// Keys left out search everything the flags would; `given` as for read_recipe.
struct SearchFile {
  PlanOptions job;
  SearchFlags flags;
  std::vector<int64_t> tp, pp, mbs, zero;
  std::vector<Recompute> recompute;
  std::vector<bool> sp;
  int64_t max_micro_batch = 0;  // 0 = the planner's default
};
SearchFile read_search_file(const std::string& path, const PlanOptions& base,
                            const SearchFlags& flags, const std::set<std::string>& given = {});
// The planner's inputs of a search file, errors naming its keys.
PlannerInputs search_file_inputs(const std::string& path, const SearchFile& f,
                                 const std::set<std::string>& given = {});

// resolve() of a recipe's options, with errors naming the recipe's key instead of the flag, except
// for the flags typed on the command line (`given`), which keep their own name.
Resolved resolve_recipe(const std::string& path, const PlanOptions& options,
                        const std::set<std::string>& given = {});

}  // namespace parallax
