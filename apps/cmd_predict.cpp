// parallax predict: the analytic prediction of one hand-chosen plan.
#include <iostream>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "plan_options.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct PredictArgs {
  PlanOptions plan;
  bool json = false;
  std::string out;
};

std::string plan_line(const PlanFile& f) {
  const PlanSpec& p = f.plan;
  std::string s = "tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) +
                  " dp=" + std::to_string(p.dp);
  if (p.vpp > 1) s += " vpp=" + std::to_string(p.vpp);
  s += " mbs=" + std::to_string(p.micro_batch) + " m=" + std::to_string(p.num_micro_batches) +
       " schedule=" + to_string(p.schedule) + " recompute=" + to_string(p.recompute) +
       (p.sequence_parallel ? " sp" : "") + " zero=" + std::to_string(p.zero) +
       " order=" + p.order;
  return s;
}

// All stages when there are few; otherwise the first two, the middle, the last two and the peak,
// with "..." where stages are skipped (the JSON output has every stage).
std::string memory_table(const Prediction& pr) {
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
  return t.str();
}

void print_text(const PlanFile& f, const EfficiencyProfile& prof, const Prediction& pr) {
  std::cout << "model    " << f.model.name << " (" << f.model.layers << " layers, hidden "
            << f.model.hidden << ", " << f.model.heads << " heads, seq " << f.model.seq_len
            << ", vocab " << f.model.vocab << ")\n"
            << "cluster  " << f.cluster.name << ": " << f.gpus << " of "
            << f.cluster.total_gpus() << " " << f.cluster.gpu.name << " GPUs\n"
            << "job      global batch " << f.job.global_batch << ", " << to_string(f.job.dtype)
            << ", framework " << f.job.framework << ", profile " << prof.name << "\n"
            << "plan     " << plan_line(f) << "\n\n";

  TextTable perf({"throughput", "value"});
  perf.add_row({"iteration time", fmt_seconds(pr.iteration_time_s)});
  perf.add_row({"tokens/s", fmt(pr.tokens_per_s, 0)});
  perf.add_row({"model TFLOP/s/GPU (no recompute)", fmt(pr.model_tflops_per_gpu, 1)});
  perf.add_row({"hardware TFLOP/s/GPU (with recompute)", fmt(pr.hardware_tflops_per_gpu, 1)});
  perf.add_row({"Megatron TFLOP/s/GPU (96BsLh^2 convention)", fmt(pr.megatron_tflops_per_gpu, 1)});
  perf.add_row({"MFU (model FLOPs / dense peak)", fmt_pct(pr.mfu)});
  std::cout << perf.str() << '\n';

  const double it = pr.iteration_time_s;
  TextTable time({"time per iteration", "seconds", "share"});
  const std::pair<const char*, double> parts[] = {
      {"compute (critical stage)", pr.time.compute_s}, {"tensor-parallel comm", pr.time.tp_comm_s},
      {"pipeline p2p", pr.time.pp_comm_s},             {"pipeline bubble", pr.time.bubble_s},
      {"data-parallel comm (exposed)", pr.time.dp_comm_exposed_s},
      {"optimizer step", pr.time.optimizer_s}};
  for (const auto& [name, s] : parts) time.add_row({name, fmt(s, 3), fmt_pct(s / it)});
  std::cout << time.str() << '\n';

  std::cout << "memory per GPU by pipeline stage (" << pr.bytes_per_param
            << " bytes/param convention, ZeRO-" << f.plan.zero << ")\n"
            << memory_table(pr) << "peak " << fmt_gb(pr.peak_bytes) << " on stage "
            << pr.peak_stage << " + reserve " << fmt_gb(pr.reserve_bytes) << " of "
            << fmt_gb(pr.capacity_bytes) << ": "
            << (pr.fits ? "fits" : "DOES NOT FIT") << " (headroom "
            << fmt_gb(pr.capacity_bytes - pr.peak_bytes - pr.reserve_bytes) << ")\n";
}

void run_predict(const PredictArgs& a) {
  const Resolved r = resolve(a.plan);
  const Prediction pr = predict(r.file.model, r.file.cluster, r.file.job, r.file.plan, r.profile);
  if (!a.out.empty()) write_file_atomic(a.out, to_json(r.file).dump(2) + "\n");
  if (a.json) {
    nlohmann::json j = to_json(pr);
    j["plan"] = to_json(r.file.plan);
    j["gpus"] = r.file.gpus;
    j["profile"] = r.profile.name;
    std::cout << j.dump(2) << '\n';
  } else {
    print_text(r.file, r.profile, pr);
  }
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand("predict", "predict time, throughput and memory of one plan");
  add_plan_options(*sub, args->plan);
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_option("--out", args->out, "write the plan file (model, cluster, job, plan)");
  sub->callback([args] { run_predict(*args); });
}

}  // namespace parallax::cli
