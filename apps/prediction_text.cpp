#include "prediction_text.hpp"

#include <cmath>
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

std::string throughput_table(const Prediction& pr, const PredictionInterval* iv) {
  std::vector<std::string> head{"throughput", "value"};
  if (iv != nullptr) head.push_back(fmt(iv->level * 100, 0) + "% interval");
  TextTable perf(head);
  // A time's range is predicted x [low, high]; a rate's, predicted / [high, low].
  auto row = [&](const std::string& name, double v, bool time, auto text) {
    std::vector<std::string> r{name, text(v)};
    if (iv != nullptr) {
      const double lo = time ? v * iv->low_ratio : v / iv->high_ratio;
      const double hi = time ? v * iv->high_ratio : v / iv->low_ratio;
      r.push_back(text(lo) + " - " + (std::isfinite(hi) ? text(hi) : std::string("unbounded")));
    }
    perf.add_row(r);
  };
  row("iteration time", pr.iteration_time_s, true, [](double x) { return fmt_seconds(x); });
  row("tokens/s", pr.tokens_per_s, false, [](double x) { return fmt(x, 0); });
  auto one = [](double x) { return fmt(x, 1); };
  row("model TFLOP/s/GPU (no recompute)", pr.model_tflops_per_gpu, false, one);
  row("hardware TFLOP/s/GPU (with recompute)", pr.hardware_tflops_per_gpu, false, one);
  row("Megatron TFLOP/s/GPU (96BsLh^2 convention)", pr.megatron_tflops_per_gpu, false, one);
  row("MFU (model FLOPs / dense peak)", pr.mfu, false, [](double x) { return fmt_pct(x); });
  return perf.str();
}

std::string interval_note(const PredictionInterval& iv) {
  auto list = [](const std::vector<std::string>& xs) {
    std::string out;
    for (const std::string& x : xs) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  std::string note = fmt(iv.level * 100, 0) + "% interval: " + std::to_string(iv.rows) + " corpus rows of " +
                     std::to_string(iv.sources) + " sources, predicted out of sample, like this job in: " +
                     (iv.basis.empty() ? std::string("nothing narrower than the whole corpus") : list(iv.basis));
  if (!iv.dropped.empty())
    note += "; fewer than " + std::to_string(iv.needed) + " sources share also: " + list(iv.dropped);
  return note + " (docs/predict.md)\n";
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
