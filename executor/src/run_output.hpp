#pragma once
// What `parallax run` reports: each step's figures, this rank's throughput, and rank 0's
// measurements.json and Chrome trace, gathered from every rank.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/executor/comm/groups.hpp"
#include "parallax/executor/recorder.hpp"
#include "parallax/executor/run.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

struct StepRecord {
  int64_t step = 0;  // 1-based
  double loss = 0;
  double grad_norm = 0;
  double time_s = 0;
};

// Throughput of rank 0's kind: the recorded FLOPs (GEMMs, attention, element-wise, optimizer;
// with recompute, what was re-run) over the mean step time, the first step excluded when there
// are more.
struct Throughput {
  double flops_per_step_rank0 = 0;
  double mean_step_time_s = 0;
  int64_t steps_timed = 0;
  double achieved_flop_per_s_rank0 = 0;
  std::optional<double> sgemm_peak_flop_per_s;  // --gemm-peak on the CPU backend
};
Throughput measure_throughput(const Recorder& rec, const std::vector<StepRecord>& steps,
                              int64_t steps_run);

// Gathers every rank's figures (and trace events with --trace) to rank 0, which writes
// measurements.json (--out) and the trace (--trace). Collective over the world. With tp > 1,
// each rank's entry lists the replicated tensors its TP group disagreed on
// (replica_check.hpp), and "tp_replicas" says "identical" or "diverged".
void write_run_outputs(const RunOptions& o, const nlohmann::json& plan_json, int threads,
                       const BackendInfo& backend, const std::vector<StepRecord>& steps,
                       const Throughput& throughput, const Trainer& trainer, const Recorder& rec,
                       const ProcessGroups& groups,
                       const std::vector<std::string>& tp_replicas_diverged);

}  // namespace parallax::exec
