#pragma once
// Out-of-sample error of the cost model on the validation corpus: leave one source out (fit every
// profile on the other sources' rows with parallax fit's procedure, predict the left-out source's
// rows), errors grouped by source, stack, GPU or dtype, and per sweep the Spearman rank
// correlation of predicted and measured throughput.
#include <string>
#include <vector>

#include "parallax/validation/corpus.hpp"
#include "parallax/validation/validation.hpp"

namespace parallax {

// Spearman's rank correlation (ties get their average rank; Pearson correlation of the ranks).
// NaN when fewer than 2 values or either side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

struct SweepRank {
  std::string sweep;
  size_t rows = 0;
  double spearman = 0;
};
// Every sweep with at least 3 predicted rows; throughput = 1 / iteration time on both sides.
std::vector<SweepRank> sweep_ranks(const std::vector<ValidationRow>& rows);

struct GroupError {
  std::string key;
  ErrorSummary summary;
};
// by: "source", "stack", "gpu" or "dtype" (anything else throws InputError naming --group-by).
std::vector<GroupError> group_errors(const std::vector<ValidationRow>& rows, const std::string& by);

struct CrossValidation {
  std::vector<ValidationRow> rows;  // each predicted by profiles fitted without its source group
  ErrorSummary summary;
  // Supported rows no fit could predict out of sample (no other source on their profile).
  std::vector<UnsupportedRun> unpredicted;
  // Per left-out group and profile: what the fit had to go on ("h100-megatron without
  // nemotron4-15b: 105 rows; curve e_max; stack megatron-lm not fitted").
  std::vector<std::string> folds;
};
CrossValidation cross_validate_by_source(const Corpus& corpus, TopologyCache& topos);

}  // namespace parallax
