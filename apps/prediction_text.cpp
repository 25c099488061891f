#include "prediction_text.hpp"

#include <vector>

#include "text_table.hpp"

namespace parallax::cli {

std::string inputs_header(const ModelSpec& m, const ClusterSpec& c, int64_t gpus, const JobSpec& j,
                          const std::string& profile) {
  return "model    " + m.name + " (" + std::to_string(m.layers) + " layers, hidden " +
         std::to_string(m.hidden) + ", " + std::to_string(m.heads) + " heads, seq " +
         std::to_string(m.seq_len) + ", vocab " + std::to_string(m.vocab) + ")\n" +
         "cluster  " + c.name + ": " + std::to_string(gpus) + " of " +
         std::to_string(c.total_gpus()) + " " + c.gpu.name + " GPUs\n" +
         "job      global batch " + std::to_string(j.global_batch) + ", " + to_string(j.dtype) +
         ", framework " + j.framework +
         (j.attention == Attention::fused ? " (fused attention)" : "") + ", profile " + profile +
         "\n";
}

std::string throughput_table(const Prediction& pr) {
  TextTable perf({"throughput", "value"});
  perf.add_row({"iteration time", fmt_seconds(pr.iteration_time_s)});
  perf.add_row({"tokens/s", fmt(pr.tokens_per_s, 0)});
  perf.add_row({"model TFLOP/s/GPU (no recompute)", fmt(pr.model_tflops_per_gpu, 1)});
  perf.add_row({"hardware TFLOP/s/GPU (with recompute)", fmt(pr.hardware_tflops_per_gpu, 1)});
  perf.add_row({"Megatron TFLOP/s/GPU (96BsLh^2 convention)", fmt(pr.megatron_tflops_per_gpu, 1)});
  perf.add_row({"MFU (model FLOPs / dense peak)", fmt_pct(pr.mfu)});
  return perf.str();
}

std::string time_table(const Prediction& pr) {
  const double it = pr.iteration_time_s;
  TextTable time({"time per iteration", "seconds", "share"});
  // The parts every plan has, then those only some plans have (where not zero).
  for (const bool some : {false, true}) {
    for (const TimePartInfo& part : kTimeParts) {
      const double s = pr.time.*part.seconds;
      if (part.some_plans_only == some && (!some || s > 0))
        time.add_row({part.description, fmt(s, 3), fmt_pct(s / it)});
    }
  }
  return time.str();
}

// All stages when there are few; otherwise the first two, the middle, the last two and the peak,
// with "..." where stages are skipped (the JSON output has every stage).
std::string memory_section(const Prediction& pr, const PlanSpec& p) {
  TextTable t({"stage", "weights", "grads", "optimizer", "activations", "buffers", "total"});
  const size_t n = pr.memory.size();
  std::vector<bool> show(n, n <= 8);
  for (size_t i : {size_t{0}, size_t{1}, n / 2, n - 2, n - 1}) {
    if (i < n) show[i] = true;
  }
  show[static_cast<size_t>(pr.peak_stage)] = true;
  for (size_t i = 0; i < n; ++i) {
    if (!show[i]) {
      if (i > 0 && show[i - 1]) t.add_row({"...", "", "", "", "", "", ""});
      continue;
    }
    const StageMemory& s = pr.memory[i];
    t.add_row({std::to_string(i), fmt_gb(s.weights_bytes), fmt_gb(s.grads_bytes),
               fmt_gb(s.optimizer_bytes), fmt_gb(s.activations_bytes), fmt_gb(s.buffers_bytes),
               fmt_gb(s.total_bytes())});
  }
  return "memory per GPU by pipeline stage (" + std::to_string(pr.bytes_per_param) +
         " bytes/param convention, ZeRO-" + std::to_string(p.zero) +
         (pr.zero_run != p.zero ? " run as ZeRO-" + std::to_string(pr.zero_run) +
                                      ": the stack gathers each stage's parameters once per step"
                                : std::string()) +
         ")\n" + t.str() + "peak " +
         fmt_gb(pr.peak_bytes) + " on stage " + std::to_string(pr.peak_stage) + " + reserve " +
         fmt_gb(pr.reserve_bytes) + " of " + fmt_gb(pr.capacity_bytes) + ": " +
         (pr.fits ? "fits" : "DOES NOT FIT") + " (headroom " +
         fmt_gb(pr.capacity_bytes - pr.peak_bytes - pr.reserve_bytes) + ")\n";
}

}  // namespace parallax::cli
