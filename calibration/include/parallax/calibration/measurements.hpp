#pragma once
// measurements.json of `parallax run` (executor/run.cpp), read and checked against its own plan:
// a file whose plan does not match its ranks, or with negative or non-finite times, is refused
// with a one-line InputError naming the JSON path and the rule.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/plan_file.hpp"

namespace parallax::calib {

struct MeasuredOp {
  std::string name;
  std::string op_class;  // costmodel op class, "" for none
  int64_t calls = 0;
  double total_s = 0;
  std::string shape;
};

struct MeasuredCollective {
  std::string name;
  std::string group;  // "tp", "dp", "pp", "embedding"
  int64_t calls = 0;
  double total_s = 0;
  double bytes = 0;  // total over calls (nccl-tests size per call)
};

struct MeasuredRank {
  int64_t rank = 0, tp_rank = 0, pp_rank = 0, dp_rank = 0, cp_rank = 0;
  std::vector<MeasuredOp> ops;
  std::vector<MeasuredCollective> collectives;
};

struct Measurements {
  std::string source;
  PlanFile plan;
  std::string backend;
  std::string executed_dtype;
  int64_t world_size = 0;
  int64_t threads_per_rank = 0;
  std::vector<double> iteration_s;  // every step, the first included
  std::vector<MeasuredRank> ranks;
  // Mean step time without the first (warm-up) step when there are more.
  double mean_iteration_s() const;
};

// Executor op name -> cost-model op class ("" when the op has none).
std::string executor_op_class(const std::string& name);

Measurements read_measurements(const std::string& path);
Measurements measurements_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace parallax::calib
