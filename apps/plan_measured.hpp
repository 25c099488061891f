#pragma once
// plan --measured F...: the shortlist's runs read back (docs/predict.md, the shortlist). Each file
// is a `parallax run` measurements.json (it names its plan) or a Megatron-LM, Megatron-DeepSpeed
// or TorchTitan log, read with the plan.json of its directory (plan --shortlist writes one there).
// Executed runs refit the profile (calibration's refit_from_measurements); what error every plan
// of the job still shares is then measured over refitted prediction, geometric mean over the
// measured plans.
// The final ranking puts each measured plan at its measured time (median step, warm-up left
// out), with the interval its own steps give, and every other plan at its refitted time, with the
// tie rule's ratio error as its interval: anchored on a measured plan of the same job, only the
// error of the ratio of two plans' times is left.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/calibration/measurements.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax::cli {

struct MeasuredPlan {
  std::string source;  // the file
  std::string kind;    // "parallax run", "megatron-lm log", "megatron-deepspeed log", "torchtitan log"
  PlanFile plan;
  std::vector<double> steps_s;  // iteration times, the first (warm-up) left out when there are more
  double time_s = 0;            // their median
  std::optional<calib::Measurements> run;  // an executed run, which refits the profile
};

// Reads every file, or throws InputError naming the file and the rule: unreadable, neither
// format, a log without its plan.json or of another global batch, a plan of another job than
// `planned` (model, cluster, GPUs and job must be the same).
std::vector<MeasuredPlan> read_measured(const std::vector<std::string>& paths, const PlanFile& planned);

struct FinalPlan {
  RankedPlan ranked;                 // the plan and its refitted prediction
  const MeasuredPlan* measured = nullptr;
  double time_s = 0;                 // measured, else refitted x the shared error
  double low_s = 0, high_s = 0;      // its interval at the level
  std::string basis;
};

struct FinalRanking {
  double level = 0;
  double shared_scale = 1;  // measured over refitted prediction, geometric mean
  bool profile_refit = false;
  std::vector<FinalPlan> plans;  // fastest first
};

// res: the search under the refitted profile; predict_plan prices a measured plan the search did
// not rank; interval_of gives a plan's interval where the tie rule has too few sweeps.
FinalRanking final_ranking(const SearchResult& res, const std::vector<MeasuredPlan>& measured,
                           const TieRule& ties, const std::function<RankedPlan(const PlanSpec&)>& predict_plan,
                           const std::function<PredictionInterval(const PlanSpec&)>& interval_of);

std::string final_text(const FinalRanking& f, size_t top);
// The first plan's time and interval, for its plan file.
PlanExpectation expectation(const FinalRanking& f);
nlohmann::json final_json(const FinalRanking& f, size_t top);

}  // namespace parallax::cli
