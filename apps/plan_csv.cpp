#include "plan_csv.hpp"

#include <cstdio>

namespace parallax::cli {
namespace {

std::string num(double x, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string plan_fields(const PlanSpec& p) {
  const std::string mbs = p.micro_batch > 0 ? std::to_string(p.micro_batch) : "";
  const std::string m = p.micro_batch > 0 ? std::to_string(p.num_micro_batches) : "";
  const std::string group =
      p.schedule == Schedule::interleaved ? std::to_string(microbatch_group_size(p)) : "";
  return std::to_string(p.tp) + "," + std::to_string(p.cp) + "," + std::to_string(p.pp) + "," +
         std::to_string(p.vpp) + "," +
         group + "," + std::to_string(p.dp) + "," + mbs + "," + m + "," + to_string(p.schedule) + "," +
         to_string(p.recompute) + "," + (p.sequence_parallel ? "on" : "off") + "," +
         std::to_string(p.zero) + "," + std::to_string(p.first_stage_layers) + "," +
         std::to_string(p.last_stage_layers);
}

std::string predicted_fields(const Prediction& pr, double time_s) {
  const double scale = pr.iteration_time_s / time_s;  // throughput at the ranking time
  return num(time_s, "%.6g") + "," + num(pr.tokens_per_s * scale, "%.6g") + "," +
         num(pr.mfu * scale, "%.4f") + "," + num(pr.peak_bytes / 1e9, "%.3f");
}

}  // namespace

std::string candidates_csv(const SearchResult& res) {
  std::string out =
      "status,rank,tp,cp,pp,vpp,microbatch_group,dp,mbs,m,schedule,recompute,sp,zero,first_stage_layers,"
      "last_stage_layers,reason,iteration_time_s,tokens_per_s,mfu,peak_memory_gb\n";
  for (size_t i = 0; i < res.plans.size(); ++i) {
    const RankedPlan& r = res.plans[i];
    out += "ranked," + std::to_string(i + 1) + "," + plan_fields(r.plan) + ",," +
           predicted_fields(r.prediction, r.time_s) + "\n";
  }
  for (const RankedPlan& r : res.unfit)
    out += "memory,," + plan_fields(r.plan) + ",fits-in-memory," + predicted_fields(r.prediction, r.time_s) + "\n";
  for (const RejectedPlan& r : res.rejected) out += "rule,," + plan_fields(r.plan) + "," + r.rule + ",,,,\n";
  return out;
}

}  // namespace parallax::cli
