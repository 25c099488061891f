#pragma once
// A capacity row with only what the days and scaling charts read: the GPU count, days, cost and a
// best plan at 100 model TFLOP/s per GPU.
#include <cstdint>

#include "parallax/planner/capacity.hpp"

namespace parallax::test {

inline CapacityRow row_with_days(int64_t gpus, double days, double cost_usd = 0) {
  CapacityRow r;
  r.gpus = gpus;
  r.best = RankedPlan{};
  r.best->time_s = 1;
  r.best->prediction.iteration_time_s = 1;
  r.best->prediction.model_tflops_per_gpu = 100;
  r.days = days;
  r.cost_usd = cost_usd;
  return r;
}

}  // namespace parallax::test
