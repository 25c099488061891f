#pragma once
// The closed loop (docs/design.md §9): predictions of executed plans next to their measurements, and
// profiles refitted from measurements of executed runs, nccl-tests output and Megatron-LM logs.
#include <string>
#include <vector>

#include "parallax/calibration/measurements.hpp"
#include "parallax/calibration/megatron_log.hpp"
#include "parallax/calibration/nccl_tests.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::calib {

struct CompareRow {
  std::string kind;  // "iteration", "op class", "collective"
  std::string name;
  double predicted_s = 0;  // per iteration, mean over ranks (op classes, collectives)
  double measured_s = 0;
  std::string note;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

struct Comparison {
  std::string plan;  // e.g. "gpt-tiny tp2 pp1 dp1 mbs2 m4 1f1b recompute none"
  std::vector<CompareRow> rows;
  double iteration_error() const;  // the iteration row's
};

// Predicts the measured run's plan on its own cluster with the executed dtype and the
// executor's stack; refuses a profile measured on another backend or with other threads per rank.
Comparison compare(const Measurements& m, const EfficiencyProfile& prof);

// Refits from executed runs: the GEMM shapes and op classes the runs measured replace the
// profile's; everything else is kept (collectives too: a run's collective times include waiting
// for the group's slowest rank). Provenance lists the runs.
EfficiencyProfile refit_from_measurements(const EfficiencyProfile& base,
                                          const std::vector<Measurements>& runs);
// Replaces (or adds) the fit of the run's collective, group size and span from its out-of-place
// times (in-place where out-of-place is missing). The collective and ranks come from
// identify_nccl_tests (nccl_tests_collective.hpp): the output's own name, else
// collective_override (--collective), else the table. A fit from fewer than three sizes or
// with none <= 64 KiB (its latency barely constrained) is kept, with one line in *warnings
// naming the source.
EfficiencyProfile refit_from_nccl_tests(const EfficiencyProfile& base, const NcclTestsRun& run,
                                        const std::string& source,
                                        const std::string& collective_override = "",
                                        std::vector<std::string>* warnings = nullptr);
// Scales the plan's framework entry so the plan's predicted iteration time equals the log's
// median iteration time (first logged iteration excluded when there are more). Refuses a log
// whose global batch size differs from the plan's.
EfficiencyProfile refit_from_megatron_log(const EfficiencyProfile& base, const MegatronLog& log,
                                          const PlanFile& plan, const std::string& source);

}  // namespace parallax::calib
