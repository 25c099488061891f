#include "run_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "parallax/core/atomic_file.hpp"
#include "parallax/executor/measurements.hpp"
#include "parallax/kernels/gemm_path.hpp"

namespace parallax::exec {

using nlohmann::json;

namespace {

json machine_json(int threads) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return {{"host", host},
          {"cores", std::thread::hardware_concurrency()},
          {"threads_per_rank", threads},
          {"openblas_coretype_env", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : ""},
          {"omp_wait_policy", getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : ""},
          {"cpu_wants_coretype", kernels::wanted_openblas_coretype()}};
}

json to_json(const Throughput& t) {
  json j = {{"flops_per_step_rank0", t.flops_per_step_rank0},
            {"mean_step_time_s", t.mean_step_time_s},
            {"steps_timed", t.steps_timed},
            {"achieved_flop_per_s_rank0", t.achieved_flop_per_s_rank0}};
  if (t.sgemm_peak_flop_per_s) {
    j["sgemm_peak_flop_per_s"] = *t.sgemm_peak_flop_per_s;
    j["sgemm_peak_shape"] = "1024x1024x1024";
    j["fraction_of_sgemm_peak"] = t.achieved_flop_per_s_rank0 / *t.sgemm_peak_flop_per_s;
  }
  return j;
}

// This rank's part of measurements.json: its recorded ops, parameter bytes per tensor family
// (from the size table the memory model is tested against) and its flat allocations as they are
// (Adam m, v on the own shard with ZeRO-1).
json rank_json(const Trainer& trainer, const Recorder& rec, const ProcessGroups& groups,
               const BackendInfo& backend, const std::vector<std::string>& tp_replicas_diverged) {
  json mine = rank_measurements(rec, groups);
  if (groups.tp.size > 1) mine["tp_replicas_diverged"] = tp_replicas_diverged;
  const double bytes_per_param = backend.executed_dtype == "bf16" ? 2.0 : 4.0;
  json families = json::object();
  for (const auto& t : trainer.tensors())
    families[to_string(t.family)] =
        families.value(to_string(t.family), 0.0) + bytes_per_param * static_cast<double>(t.numel());
  mine["param_bytes_by_family"] = families;
  const json memory = trainer.memory_json();
  mine["flat_bytes"] = memory.at("flat_bytes");
  if (!memory.at("device").empty()) mine["device"] = memory.at("device");
  return mine;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

}  // namespace

Throughput measure_throughput(const Recorder& rec, const std::vector<StepRecord>& steps,
                              int64_t steps_run) {
  double flops = 0;
  for (const auto& [name, s] : rec.stats())
    if (s.stream == Stream::compute || s.stream == Stream::optimizer) flops += s.flops;
  double time_s = 0;
  int64_t timed = 0;
  for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i, ++timed) time_s += steps[i].time_s;
  Throughput t;
  t.flops_per_step_rank0 = flops / static_cast<double>(steps_run);
  t.mean_step_time_s = time_s / static_cast<double>(std::max<int64_t>(timed, 1));
  t.steps_timed = timed;
  t.achieved_flop_per_s_rank0 = t.flops_per_step_rank0 / t.mean_step_time_s;
  return t;
}

void write_run_outputs(const RunOptions& o, const json& plan_json, int threads,
                       const BackendInfo& backend, const std::vector<StepRecord>& steps,
                       const Throughput& throughput, const Trainer& trainer, const Recorder& rec,
                       const ProcessGroups& groups,
                       const std::vector<std::string>& tp_replicas_diverged) {
  const std::vector<json> ranks =
      gather_json(rank_json(trainer, rec, groups, backend, tp_replicas_diverged), groups.world);
  std::vector<json> traces;
  if (!o.trace_path.empty()) traces = gather_json(rank_trace_events(rec, groups), groups.world);
  if (groups.world.rank != 0) return;
  if (!o.out_path.empty()) {
    json machine = machine_json(threads);
    if (!backend.cuda.is_null()) machine["cuda"] = backend.cuda;
    json iterations = json::array();
    for (const StepRecord& s : steps)
      iterations.push_back({{"step", s.step}, {"loss", s.loss}, {"grad_norm", s.grad_norm}, {"time_s", s.time_s}});
    json m = {{"parallax_measurements_version", 1},
                    {"date", utc_now()},
                    {"plan", plan_json},
                    {"executed_dtype", backend.executed_dtype},
                    {"backend", trainer.backend()},
                    {"world_size", groups.world.size},
                    {"machine", machine},
                    {"gemm_path", backend.gemm_path},
                    {"precision", backend.precision},
                    {"data", o.data_path.empty() ? "synthetic" : o.data_path},
                    {"seed", o.seed},
                    {"parameters_per_rank", trainer.numel()},
                    {"iterations", iterations},
                    {"throughput", to_json(throughput)},
                    {"ranks", ranks}};
    if (groups.tp.size > 1) {
      bool diverged = false;
      for (const auto& r : ranks) diverged = diverged || !r.at("tp_replicas_diverged").empty();
      m["tp_replicas"] = diverged ? "diverged" : "identical";
    }
    write_file_atomic(o.out_path, m.dump(1) + "\n");
  }
  if (!o.trace_path.empty()) {
    json ev = json::array();
    for (const auto& t : traces)
      for (const auto& e : t) ev.push_back(e);
    write_file_atomic(o.trace_path, json{{"traceEvents", ev}, {"displayTimeUnit", "ms"}}.dump() + "\n");
  }
}

}  // namespace parallax::exec
