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
// Keys: the job's flags (model, cluster, nodes, gpus, global_batch, seq_len, dtype, bytes_per_param,
// stack, attention_kernel, attention, tokens, price, profile) and every plan field's flag
// (plan_fields.hpp: tp, pp, cp, ep, etp, moe_dispatcher, vpp, microbatch_group, mbs, sp, ...), each
// the flag's name with '_' for '-'. A key left out takes the flag's default. Errors name the file
// and the key ("$.tp").
#include <set>
#include <string>

#include "parallax/inputs/job_flags.hpp"

namespace parallax {

// The recipe's values as the flags would give them, over `base`; the keys in `given` (flags typed
// on the command line, by recipe key) keep base's value: a typed flag wins over the file. Throws
// InputError(path, "$.key", rule) for an unreadable file, malformed YAML, a key that is not a
// flag or a value that is not a scalar.
PlanOptions read_recipe(const std::string& path, PlanOptions base,
                        const std::set<std::string>& given = {});
// The recipe key of a flag: "--global-batch" -> "global_batch", "--framework" -> "stack".
std::string recipe_key(const std::string& flag);

// resolve() of a recipe's options, with errors naming the recipe's key instead of the flag, except
// for the flags typed on the command line (`given`), which keep their own name.
Resolved resolve_recipe(const std::string& path, const PlanOptions& options,
                        const std::set<std::string>& given = {});

}  // namespace parallax
