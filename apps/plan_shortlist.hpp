#pragma once
// plan --shortlist K: the fewest plans, most likely first, that hold the fastest with the intervals'
// level of odds, at most K (costmodel/shortlist.hpp), and a
// short benchmark launch for each, written into one new directory (docs/predict.md):
//   DIR/shortlist.json           the plans, their odds, and each one's files
//   DIR/N/plan.json              the N-th plan of the shortlist (N = 1, 2, ...)
//   DIR/N/parallax.sh            `parallax run --steps S` under mpirun, writing measurements.json
//                                (parallax.sbatch where the plan spans hosts)
//   DIR/N/megatron.sbatch        Megatron-LM stacks: S iterations on mock data, every one logged
//   DIR/N/megatron-deepspeed.sbatch  DeepSpeed stacks
//   DIR/N/torchtitan.sh          TorchTitan
// A launch whose trainer cannot run the plan is left out with its reason in shortlist.json. The
// directory must not exist: it is written whole under a temporary name and renamed.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax::cli {

struct ShortlistArgs {
  int64_t k = 0;                 // 0: no shortlist
  std::string dir = "shortlist";
  int64_t iters = 30;            // benchmark iterations (steps)
};

struct ShortlistEntry {
  size_t index = 0;  // into SearchResult::plans
  double odds = 0;
  std::string dir;                                         // DIR/N
  std::vector<std::string> files;                          // written, beside plan.json
  std::vector<std::pair<std::string, std::string>> left_out;  // launch, why
};

struct Shortlist {
  double level = 0;        // the odds the shortlist aims to reach (the tie rule's level)
  double sigma = 0;        // one plan's log-time error (plan_error_sigma)
  std::vector<double> odds;  // each ranked plan's odds of being the fastest
  std::vector<ShortlistEntry> entries;
  double odds_total() const;
};

Shortlist make_shortlist(const SearchResult& res, const TieRule& ties, size_t k);

// Writes the directory (throws InputError naming --shortlist-dir when it exists or cannot be
// written; nothing is left behind then). Fills each entry's dir, files and left_out.
void write_shortlist(Shortlist& s, const SearchResult& res, const PlannerInputs& in, const ShortlistArgs& a);

std::string shortlist_text(const Shortlist& s, const SearchResult& res, const ShortlistArgs& a);
nlohmann::json shortlist_json(const Shortlist& s, const SearchResult& res);

}  // namespace parallax::cli
