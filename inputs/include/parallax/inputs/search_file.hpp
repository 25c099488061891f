#pragma once
// A search as a file (parallax plan --search): the job as a recipe gives it and what to search.
#include <set>
#include <string>
#include <vector>

#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/search_flags.hpp"

namespace parallax {

// A search file (plan --search): the job as a recipe gives it (model, cluster, nodes, gpus,
// global_batch, seq_len, stack, dtype, bytes_per_param, attention_kernel, attention, tokens, price, profile,
// order) and what to search, each a value or a list: tp, pp, cp, vpp (1: no interleaving), mbs
// (micro-batch sizes), recompute, zero, sp (true/false), ep (expert-parallel sizes of a mixture
// of experts), the integer ones also a range {min: A, max: B}; and
// the constraints allow_cross_node_tp, allow_all, uneven_pp (true/false) and max_micro_batch.
// Keys left out search everything the flags would; `given` as for read_recipe.
struct SearchFile {
  PlanOptions job;
  SearchFlags flags;
  std::vector<int64_t> tp, pp, cp, ep, mbs, vpp, zero;
  std::vector<Recompute> recompute;
  std::vector<bool> sp;
  int64_t max_micro_batch = 0;  // 0 = the planner's default
};
SearchFile read_search_file(const std::string& path, const PlanOptions& base,
                            const SearchFlags& flags, const std::set<std::string>& given = {});
// The planner's inputs of a search file, errors naming its keys.
PlannerInputs search_file_inputs(const std::string& path, const SearchFile& f,
                                 const std::set<std::string>& given = {});

}  // namespace parallax
