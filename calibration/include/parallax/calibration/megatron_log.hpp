#pragma once
// Importer for Megatron-LM and Megatron-DeepSpeed training logs: the per-interval line printed by
// training_log() (NVIDIA/Megatron-LM megatron/training/training.py, microsoft/Megatron-DeepSpeed
// megatron/training.py), e.g.
//   Megatron-LM:
//    [2025-01-01 12:00:00.123456] iteration      100/  500000 | consumed samples:       153600 |
//    elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 150.2 |
//    learning rate: 1.000000E-04 | global batch size:  1536 | lm loss: 2.345678E+00 | ... |
//   Megatron-DeepSpeed:
//    iteration      100/  500000 | consumed samples: ... | consumed tokens: ... |
//    elapsed time per iteration (ms): 1234.5 | learning rate: 1.000E-04 | ... |
//    samples per second: 1.245 | tokens per gpu per second (tgs): 159.3 | TFLOPs: 150.20 |
// (each one line). BigScience's Megatron-DeepSpeed prints "elapsed time per iteration (s)" instead;
// it is read and converted to ms. A line counts when it holds "iteration N/M |" and an elapsed
// time field; anything before "iteration" (a timestamp, a launcher prefix
// such as "[default7]:" or "0: ") and every other line (warnings, memory reports, timers,
// DeepSpeed's own step lines) is ignored. Fields are "key: value" between '|' separators, found by
// key, so their order and the optional ones (skipped samples, grad norm, ...) do not matter.
//
// Rejected with a one-line InputError (source, "line N" / "line N, <key>", rule): an empty file,
// no iteration lines, a non-numeric value of a field read here, a negative, zero or non-finite
// elapsed time, negative TFLOP/s or samples per second, lines of both dialects in one file.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace parallax::calib {

struct MegatronIteration {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t iteration = 0;
  int64_t train_iters = 0;        // "iteration      100/  500000"
  double elapsed_ms = kNaN;       // "elapsed time per iteration (ms): 1234.5", averaged over the
                                  // log interval
  double tflops_per_gpu = kNaN;   // "throughput per GPU (TFLOP/s/GPU): 150.2" or "TFLOPs: 150.20"
  double samples_per_s = kNaN;    // "samples per second: 3.456" (Megatron-DeepSpeed)
  int64_t global_batch = 0;       // "global batch size:  1536"; 0 when absent
  int64_t consumed_samples = -1;  // "consumed samples: 153600"; -1 when absent
  double lm_loss = kNaN;          // "lm loss: 2.345678E+00"
  double learning_rate = kNaN;    // "learning rate: 1.000000E-04"
  int64_t line = 0;               // 1-based line number in the source
};

struct MegatronLog {
  std::string dialect;  // "megatron-lm" | "megatron-deepspeed"
  std::vector<MegatronIteration> iterations;  // in file order
};

// source names the input in error messages (a file name).
MegatronLog parse_megatron_log(const std::string& text, const std::string& source);

}  // namespace parallax::calib
