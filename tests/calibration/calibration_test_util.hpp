#pragma once
// Shared by the importer tests: the samples in tests/data, edits of them, and a check that bad
// input is rejected with a one-line InputError naming the place and the rule.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../core/core_test_util.hpp"  // require_input_error
#include "parallax/core/error.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::test {

inline std::string read_data(const std::string& name) {
  std::ifstream in(std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// 1-based number of the line holding the first occurrence of needle.
inline size_t line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  size_t line = 1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

// text with the first occurrence of from replaced by to (which must exist).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// measurements.json of a two-step gpt-tiny run on cpu-local (tp x dp ranks, micro-batch 2,
// fp32) as executor/run.cpp writes it, each rank timing one GEMM op: matmul_fc, 8 calls of
// 128x128x512 taking `fc_total_s` in all.
inline nlohmann::json executor_run_json(int64_t tp, int64_t dp, double fc_total_s) {
  using nlohmann::json;
  PlanFile f;
  f.model = load_model("gpt-tiny");
  f.cluster = load_cluster("cpu-local");
  f.job.global_batch = 8;
  f.job.dtype = Dtype::fp32;
  f.plan.tp = tp;
  f.plan.dp = dp;
  f.plan.micro_batch = 2;
  f.plan.num_micro_batches = 4 / dp;
  f.gpus = tp * dp;
  json ranks = json::array();
  for (int64_t r = 0; r < tp * dp; ++r)
    ranks.push_back({{"rank", r}, {"tp_rank", r % tp}, {"pp_rank", 0}, {"dp_rank", r / tp},
                     {"peak_resident_bytes", 1e8},
                     {"ops", json::array({{{"name", "matmul_fc"}, {"stream", "compute"}, {"calls", 8},
                                           {"total_s", fc_total_s}, {"shape", "128x128x512"},
                                           {"flops", 1e9}}})},
                     {"collectives", json::array()}});
  return {{"parallax_measurements_version", 1}, {"date", "2026-11-22T00:00:00Z"},
          {"plan", to_json(f)}, {"executed_dtype", "fp32"}, {"backend", "cpu"},
          {"world_size", tp * dp}, {"machine", {{"threads_per_rank", 1}}},
          {"iterations", json::array({{{"step", 1}, {"time_s", 0.2}}, {{"step", 2}, {"time_s", 0.1}}})},
          {"ranks", ranks}};
}

}  // namespace parallax::test
