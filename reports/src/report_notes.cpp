#include "report_notes.hpp"

#include <algorithm>

#include "parallax/costmodel/conventions.hpp"
#include "parallax/reports/svg.hpp"

namespace parallax::report_notes {
namespace {

std::string count(double v) {  // 10.6T, 300.0B
  if (v >= 1e12) return svg::number(v / 1e12, 1) + "T";
  if (v >= 1e9) return svg::number(v / 1e9, 1) + "B";
  return svg::number(v / 1e6, 1) + "M";
}

}  // namespace

double tokens_per_param(const ReportData& d) {
  return d.in.planner.job.tokens / model_params(d.in.planner.model);
}

std::string tokens_assumption(const ReportData& d) {
  const double tokens = d.in.planner.job.tokens;
  const double params = model_params(d.in.planner.model);
  if (d.tokens_assumed) {
    return count(tokens) + " training tokens = " + svg::number(kDefaultTokensPerParam, 0) +
           " tokens per parameter × " + count(params) +
           " parameters, the Chinchilla rule of thumb (Hoffmann et al. 2022; no --tokens given)";
  }
  return count(tokens) + " training tokens (--tokens; " + svg::number(tokens / params, 1) +
         " tokens per parameter)";
}

std::string tokens_short(const ReportData& d) {
  if (d.tokens_assumed) {
    return "assuming " + svg::number(kDefaultTokensPerParam, 0) + " tokens/parameter (Chinchilla)";
  }
  return "for " + count(d.in.planner.job.tokens) + " tokens";
}

std::string price_assumption(const ReportData& d) {
  const double price = d.in.planner.job.price_per_gpu_hour_usd;
  if (!price_known(price)) return "no --price given: cost unknown";
  return "USD " + svg::number(price, 2) + " per GPU-hour (--price)";
}

std::optional<double> cost_usd(const ReportData& d, const CapacityRow& r) {
  if (!price_known(d.in.planner.job.price_per_gpu_hour_usd) || !r.best) return std::nullopt;
  return r.cost_usd;
}

std::string cost_cell(const ReportData& d, const CapacityRow& r) {
  const std::optional<double> c = cost_usd(d, r);
  return c ? svg::number(*c, 0) : "—";
}

int64_t scaling_reference_gpus(const ReportData& d) {
  for (const CapacityRow& r : d.scaling) {
    if (r.best) return r.gpus;
  }
  return 0;
}

std::string scaling_above_100(const ReportData& d) {
  const CapacityRow* ref = nullptr;
  const CapacityRow* best = nullptr;
  for (const CapacityRow& r : d.scaling) {
    if (!r.best) continue;
    if (!ref) ref = &r;
    if (r.scaling_efficiency > 1.0 && (!best || r.scaling_efficiency > best->scaling_efficiency)) best = &r;
  }
  if (!ref || !best) return "";
  auto mfu = [](const CapacityRow& r) {
    return svg::number(r.best->prediction.mfu * r.best->throughput_scale() * 100, 1) + "%";
  };
  auto bubble = [](const CapacityRow& r) {
    return svg::number(r.best->prediction.time.bubble_s / r.best->prediction.iteration_time_s * 100, 1) + "%";
  };
  const PlanSpec& a = ref->best->plan;
  const PlanSpec& b = best->best->plan;
  auto plan = [&](const CapacityRow& r, const PlanSpec& p) {
    return "recompute " + std::string(to_string(p.recompute)) + ", pp " + std::to_string(p.pp) + ", bubble " +
           bubble(r) + ", MFU " + mfu(r);
  };
  std::string s = "Above 100% means a count does more per GPU than the " + std::to_string(ref->gpus) +
                  "-GPU reference, not that it beats linear scaling: the reference's best plan (" +
                  plan(*ref, a) + ") is less efficient than the plan at " + std::to_string(best->gpus) +
                  " GPUs (" + plan(*best, b) + ")";
  if (static_cast<int>(a.recompute) > static_cast<int>(b.recompute)) {
    s += "; with fewer GPUs the model fits in memory only with more recompute";
  }
  return s + ".";
}

std::vector<Column> plans_columns() {
  return {{"#", "rank by the simulator-refined iteration time; “=”: tied with #1 (below the table)"},
          {"plan", "tensor (tp), pipeline (pp) and data (dp) parallel sizes, micro-batch size (mbs), "
                   "activation recompute, sequence parallelism (sp), ZeRO stage"},
          {"iteration s", "seconds per training step of one global batch (simulator-refined), and its interval"},
          {"model TFLOP/s/GPU", "model FLOPs per iteration (see Conventions) / iteration time / GPUs"},
          {"Megatron TFLOP/s/GPU", "the same with Megatron-LM's FLOP count, which includes a recompute pass"},
          {"MFU", "model FLOP/s per GPU / the GPU's dense peak for the dtype"},
          {"peak GB/GPU", "predicted peak memory of the fullest pipeline stage, 10^9 bytes"},
          {"headroom GB", "GPU capacity − reserve − peak"},
          {"bubble", "pipeline bubble time / iteration time"}};
}

std::vector<Column> scaling_columns(const ReportData& d) {
  const int64_t ref = scaling_reference_gpus(d);
  return {{"GPUs", "GPU count N of the row"},
          {"best plan", "the planner's winner at N GPUs"},
          {"model TFLOP/s/GPU", "at the winner's simulator-refined iteration time"},
          {"MFU", "model FLOP/s per GPU / dense peak"},
          {"days", "training tokens / (tokens per second) / 86,400 s, and its interval; tokens: " + tokens_assumption(d)},
          {"GPU-hours", "days × 24 × N, and its interval"},
          {"cost USD", "GPU-hours × price per GPU-hour; " + price_assumption(d)},
          {"scaling", "scaling efficiency = (tokens/s_N / N) / (tokens/s_ref / N_ref), N_ref = " +
                          std::to_string(ref) +
                          " GPUs (the smallest count with a plan) = GPU-hours at N_ref / GPU-hours at N; "
                          "100% is linear scaling; the knee is the first N below 80%"}};
}

std::vector<Column> sensitivity_columns() {
  return {{"perturbation", "compute, NVLink or network speed changed by ±20% in the cost model"},
          {"winner's rank", "where the unperturbed winner ranks under the perturbation"},
          {"best plan under it", "the winner of the perturbed search"},
          {"iteration s", "that plan's iteration time under the perturbation"}};
}

}  // namespace parallax::report_notes
