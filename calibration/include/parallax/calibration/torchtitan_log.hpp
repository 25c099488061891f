#pragma once
// Importer for TorchTitan training logs: the line MetricsProcessor.log prints every
// metrics.log_freq steps (pytorch/torchtitan v0.2.2 torchtitan/components/metrics.py), e.g.
//   [rank0]:[titan] 2026-12-07 10:00:00,000 - root - INFO - step:  2  loss:  9.87654  grad_norm:
//   1.2345  memory: 30.12GiB(38.04%)  tps: 7,123  tflops: 330.12  mfu: 33.38%
// (one line; with metrics.enable_color_printing each field is preceded by an ANSI colour escape,
// which is skipped). tps is tokens per second per GPU: the rank's tokens since the last log over
// the time since it and the non-data-parallel degree (tp x pp x cp), so a step of log_freq 1
// took global_batch x seq_len / (tps x GPUs) seconds. "validate step:" lines and every other
// line are ignored.
//
// Rejected with a one-line InputError (source, "line N" / "line N, tps", rule): an empty file, no
// step lines, a step line without tps, or a tps that is not a positive number.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::calib {

struct TorchTitanStep {
  int64_t step = 0;
  double tokens_per_s_per_gpu = 0;  // "tps: 7,123"
  int64_t line = 0;                 // 1-based
};

struct TorchTitanLog {
  std::vector<TorchTitanStep> steps;  // in file order
};

TorchTitanLog parse_torchtitan_log(const std::string& text, const std::string& source);

// Whether text looks like a TorchTitan log (a "step: N ... tps:" line), before parsing it.
bool looks_like_torchtitan_log(const std::string& text);

}  // namespace parallax::calib
