#pragma once
// Capacity planning on top of the planner: GPUs vs days vs cost for a job's tokens, and "which model
// can we train with H GPU-hours" over a family of GPT shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parallax/planner/planner.hpp"

namespace parallax {

struct CapacityRow {
  int64_t gpus = 0;
  // The cluster this count was planned on: the given one, or its NVLink domains taken in SLURM
  // segments (with_job_segments: "gb200-nvl72 in segments of 16 hosts") when the count does not
  // take whole domains.
  std::string cluster;
  std::optional<RankedPlan> best;
  std::string no_plan_reason;  // when best is empty
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;  // 0 when no price was given (price_known() says whether it is a cost)
  // Scaling efficiency = (throughput_N / N) / (throughput_ref / N_ref): tokens per second per GPU,
  // at the ranking (simulator-refined) time, relative to the first row with a plan (N_ref). Above
  // 1 when the reference count's best plan is worse per GPU (recompute, a deeper pipeline).
  double scaling_efficiency = 0;
  bool knee = false;              // first row whose scaling efficiency falls below 80%
};

// `base.gpus` is ignored; one search per GPU count.
std::vector<CapacityRow> capacity_sweep(const PlannerInputs& base,
                                        const std::vector<int64_t>& gpu_counts, double tokens,
                                        double price_per_gpu_hour_usd);

// Training tokens per parameter assumed when a job gives none: the Chinchilla rule of thumb
// (Hoffmann et al. 2022, compute-optimal training).
inline constexpr double kDefaultTokensPerParam = 20;

// A price per GPU-hour of 0 means none was given: costs are unknown, not free.
inline bool price_known(double price_per_gpu_hour_usd) { return price_per_gpu_hour_usd > 0; }

// The job's tokens, or kDefaultTokensPerParam per parameter when it gives none (Hoffmann et al. 2022's compute-optimal
// ratio), as the report and the GUI's scaling curve assume.
double tokens_or_default(const JobSpec& job, const ModelSpec& model);

// Days to train `tokens` with a predicted plan.
double days_to_train(const RankedPlan& r, double tokens, int64_t seq_len, int64_t global_batch);

struct FamilyMember {
  ModelSpec model;
  double params = 0;
};

// The members of a family preset (presets/families/NAME.json), smallest first.
std::vector<FamilyMember> model_family(const std::string& name);

struct BudgetInputs {
  // Cluster, job (global batch, dtype, framework), profile and search options; the model, GPU
  // count and job tokens are not read (each family member and GPU count is searched).
  PlannerInputs planner;
  double budget_gpu_hours = 0;
  double tokens = 0;            // fixed token count; 0 = tokens_per_param * params
  double tokens_per_param = 20;
  double max_days = 180;        // GPU counts that would take longer are not used
  std::string family = "megatron-gpt";
};

struct BudgetCandidate {
  FamilyMember member;
  double tokens = 0;
  int64_t gpus = 0;
  std::optional<RankedPlan> plan;
  double gpu_hours = 0;
  double days = 0;
};

struct BudgetAnswer {
  std::optional<BudgetCandidate> answer;      // largest member within the budget
  std::optional<BudgetCandidate> next_larger;  // the member after it (over budget, or no plan)
};

BudgetAnswer budget_search(const BudgetInputs& in);

}  // namespace parallax
