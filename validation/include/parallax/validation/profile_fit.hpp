#pragma once
// Fits a GPU profile's efficiency parameters to published runs (parallax fit): never per-row
// constants. On the rows predicted with this profile (their cluster's profile is base.name):
//   1. the GEMM curve e_max * d / (d + d_half) in the GEMM's smallest dimension d and the
//      memory-bound efficiency, on the rows of the reference stack (megatron-lm, scale 1 by
//      definition): all three with >= kMinRowsForShape rows, e_max alone (shape from the base)
//      with fewer, nothing (the base's curve) with none;
//   2. one throughput scale per other stack with >= kMinRowsForScale rows, the curve fixed (with
//      fewer, the prior 1.0: a scale fitted on one or two rows would be a per-row constant);
//   3. the host's time per MoE layer and micro-batch (moe_layer_host_s), on the mixture-of-experts
//      rows of every GPU, each predicted with its own cluster's profile: host work, not the GPU's
//      (the rows of this profile's MoE models fit nothing else).
// Objective: mean |error| of predicted vs measured throughput. Deterministic coordinate descent on
// fixed grids (e_max in steps of 0.005, d_half from a list, memory efficiency in steps of 0.05,
// scales 0.2-2 in steps of 0.005), from a fixed start, so the result does not depend on the base's
// fitted values. Unpublished plan fields are chosen (fastest) under the profile being fitted,
// re-chosen after each round until they stop changing.
#include <map>
#include <string>
#include <vector>

#include "parallax/costmodel/profile.hpp"
#include "parallax/validation/corpus.hpp"
#include "parallax/validation/validation.hpp"

namespace parallax {

inline constexpr size_t kMinRowsForShape = 8;
inline constexpr size_t kMinRowsForScale = 3;
inline constexpr const char* kReferenceStack = "megatron-lm";

struct StackFit {
  double scale = 1;
  size_t rows = 0;  // 0: not fitted, the prior 1.0
};

struct ProfileFit {
  EfficiencyProfile profile;
  std::vector<std::string> rows_used;
  // Rows of mixture-of-experts models: predicted with the profile, never fitted
  // (fit_profile_to_runs).
  std::vector<std::string> rows_not_fitted;
  // The mixture-of-experts rows of every GPU that fitted moe_layer_host_s (step 3).
  std::vector<std::string> moe_host_rows;
  std::string curve_fitted;  // "e_max, d_half and memory efficiency", "e_max", or "none"
  std::map<std::string, StackFit> stacks;
  ErrorSummary in_sample;
};

// stacks: every stack the profile must carry an entry for (rows' stacks are added). date: the
// provenance date written. Step 3 predicts the other GPUs' rows with their presets' profiles, a
// preset that carries this profile's fit with the fit being made. A base that itself carries
// another profile's fit is refused (InputError): fit that one.
ProfileFit fit_profile_to_runs(const std::vector<PublishedRun>& runs, const EfficiencyProfile& base,
                               const std::vector<std::string>& stacks, const std::string& date,
                               TopologyCache& topos);

// Several profiles on the same rows (a fold of cross-validation): steps 1 and 2 for each, then
// step 3 once, every MoE row predicted with its profile as fitted here (the presets' profile for
// the others), and the one host time written into each. Keyed by profile name; a profile with no
// rows comes back unfitted (rows_used empty). A base that carries_fit_of another profile is never
// fitted on its own rows: it comes back as that profile's fit on these rows (fitted here even
// when not among the bases) under its own name (carry_fit).
std::map<std::string, ProfileFit> fit_profiles(const std::vector<PublishedRun>& runs,
                                               const std::vector<EfficiencyProfile>& bases,
                                               const std::vector<std::string>& stacks,
                                               const std::string& date, TopologyCache& topos);

// Step 3 alone: the host time per MoE layer and micro-batch that best predicts the
// mixture-of-experts rows of `runs`, each with its cluster's profile from `profiles` (read from
// the presets when absent). host_s stays 0 without such rows.
struct MoeHostFit {
  double host_s = 0;
  std::vector<std::string> rows;
};
MoeHostFit fit_moe_host(const std::vector<PublishedRun>& runs,
                        const std::map<std::string, EfficiencyProfile>& profiles, TopologyCache& topos);

// A time in milliseconds with one decimal: "9.0 ms".
std::string format_ms(double seconds);

// The table the cost model reads, drawn from the curve at d = 32 ... 16384 (4 decimals).
std::vector<std::pair<double, double>> gemm_table(double e_max, double d_half);

}  // namespace parallax
