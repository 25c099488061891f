#include "parallax/executor/run.hpp"

#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include <nlohmann/json.hpp>

#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/executor/checkpoint.hpp"
#include "parallax/executor/checkpoint_identity.hpp"
#include "parallax/executor/measurements.hpp"
#include "parallax/executor/stop_signal.hpp"
#include "parallax/executor/trainer.hpp"
#include "parallax/kernels/gemm_path.hpp"
#if defined(PARALLAX_HAVE_CUDA)
#include "parallax/executor/cuda_trainer.hpp"
#endif

namespace parallax::exec {

using nlohmann::json;

namespace {

// What the CPU executor can run beyond what validate_plan already checked.
void check_runnable(const PlanFile& pf, int world_size, const std::string& src) {
  const ModelSpec& m = pf.model;
  const PlanSpec& p = pf.plan;
  auto fail = [&](const std::string& path, const std::string& rule) {
    throw InputError(src, path, rule);
  };
  if (world_size != p.gpus())
    fail("$.plan", "the world size (" + std::to_string(world_size) +
                       " MPI ranks) must equal tp*pp*dp = " + std::to_string(p.gpus()));
  if (m.position != Position::learned)
    fail("$.model.position", std::string("the CPU executor runs learned positions only (got ") +
                                 to_string(m.position) + ")");
  if (m.kv_heads != 0 && m.kv_heads != m.heads)
    fail("$.model.kv_heads", "the CPU executor runs multi-head attention only (kv_heads = heads)");
  if (m.heads % p.tp != 0) fail("$.plan.tp", "heads must be divisible by tp");
  if (m.ffn_hidden % p.tp != 0) fail("$.plan.tp", "ffn_hidden must be divisible by tp");
  if (m.layers % (p.pp * p.vpp) != 0)
    fail("$.plan.pp", "layers must be divisible by pp*vpp for the executor");
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0)
    fail(p.first_stage_layers > 0 ? "$.plan.first_stage_layers" : "$.plan.last_stage_layers",
         "the CPU executor runs even pipeline splits only");
  if (p.zero > 1) fail("$.plan.zero", "the executor runs ZeRO 0 or 1 (distributed optimizer)");
  if (p.sequence_parallel && (p.micro_batch * m.seq_len) % p.tp != 0)
    fail("$.plan.sequence_parallel", "micro_batch * seq_len must be divisible by tp");
}

// A step whose loss or gradient norm is NaN or infinite ends the run on every rank (agreed over
// the world), before it could be checkpointed.
void check_finite(const StepResult& r, int64_t step, const std::string& last_checkpoint, MPI_Comm world) {
  int bad = std::isfinite(r.loss) && std::isfinite(r.grad_norm) ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, world);
  if (!bad) return;
  const bool loss_bad = !std::isfinite(r.loss);
  const double v = loss_bad ? r.loss : r.grad_norm;
  throw RunFailure(std::string("run: the ") + (loss_bad ? "loss" : "gradient norm") + " is " +
                   (std::isnan(v) ? "nan" : "inf") + " at step " + std::to_string(step) +
                   "; stopped without checkpointing it (checkpoints: " + last_checkpoint + ")");
}

int threads_per_rank(int requested) {
  if (requested > 0) return requested;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / local);
}

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

// --backend: cpu, or cuda when built with it and a device is there (checked first, so a
// machine without a GPU gets one line and exit code 2 whatever else is wrong).
void check_backend(const std::string& backend) {
  if (backend == "cpu") return;
  if (backend != "cuda")
    throw InputError("command line", "--backend", "must be cpu or cuda (got " + backend + ")");
#if defined(PARALLAX_HAVE_CUDA)
  std::string why;
  if (cuda_device_count(&why) == 0)
    throw InputError("command line", "--backend cuda", "no CUDA device (" + why + ")");
  // Up to 7 streams per rank (compute, TP, DP, 4 pipeline channels) must not share hardware
  // queues: a queued kernel behind an unmatched NCCL send could wait forever.
  if (const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"); c && std::atoi(c) < 7)
    throw InputError("environment", "CUDA_DEVICE_MAX_CONNECTIONS",
                     std::string("must be unset or >= 7 for the CUDA backend's streams (got ") + c + ")");
#else
  throw InputError("command line", "--backend cuda",
                   "this parallax was built without the CUDA backend (PARALLAX_CUDA=OFF)");
#endif
}

}  // namespace

void run_plan(const RunOptions& o) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  check_backend(o.backend);
  const bool cuda = o.backend == "cuda";
  const json plan_json = read_json_file(o.plan_path);
  const PlanFile pf = read_plan_file(plan_json, o.plan_path);
  check_runnable(pf, world_size, o.plan_path);
  check_checkpoint_dir({o.checkpoint_dir, o.resume, o.resume_if_present}, pf.model);
  TokenSource data = o.data_path.empty()
                         ? TokenSource(o.seed, pf.model.vocab)
                         : TokenSource::from_file(o.data_path, pf.model.vocab, pf.model.seq_len);
  const PlanSpec& p = pf.plan;
  const int threads = threads_per_rank(o.threads);
  kernels::set_compute_threads(threads);

  ProcessGroups groups = make_process_groups(p, pf.model.tied_embeddings);
  Recorder rec;
  TrainOptions topt;
  topt.seed = o.seed;
  topt.grad_clip = static_cast<float>(o.grad_clip);
  topt.adam.lr = static_cast<float>(o.lr);
  json backend_info = {{"executed_dtype", "fp32"}, {"gemm_path", kernels::gemm_path_description()}};
  std::unique_ptr<Trainer> trainer_ptr;
#if defined(PARALLAX_HAVE_CUDA)
  if (cuda) trainer_ptr = make_cuda_trainer(pf, topt, groups, rec, std::move(data), &backend_info);
#endif
  if (!cuda) trainer_ptr = make_cpu_trainer(pf, topt, groups, rec, std::move(data));
  Trainer& trainer = *trainer_ptr;
  install_stop_handlers();
  // What a failure message says of the checkpoints: the newest one written or loaded.
  std::string last_checkpoint = o.checkpoint_dir.empty() ? "no --checkpoint-dir, none written" : "none written yet";
  if (o.resume || o.resume_if_present) {
    if (load_latest_checkpoint(o.checkpoint_dir, trainer, groups))
      last_checkpoint = "the last one is " + checkpoint_step_dir(o.checkpoint_dir, trainer.step_count());
    else if (o.resume)
      throw InputError(o.checkpoint_dir, "--resume", "no complete checkpoint loads (see the warnings above)");
    else if (world_rank == 0)
      std::fprintf(stderr, "parallax: no checkpoint to resume in %s: starting from step 0\n",
                   o.checkpoint_dir.c_str());
  }

  json iterations = json::array();
  const int64_t first = trainer.step_count();
  for (int64_t s = first; s < first + o.steps; ++s) {
    const bool last = s + 1 == first + o.steps;
    std::function<void()> hook;
    if (s == first && !o.dump_grads_dir.empty())
      hook = [&] { dump_gradients(o.dump_grads_dir, trainer, groups); };
    trainer.capture_logits(s == first && !o.dump_grads_dir.empty());
    if (world_rank == o.fault_rank && s + 1 == o.fault_step)
      hook = [] { std::raise(SIGKILL); };
    if (s + 1 == o.fault_nan_step) {
      trainer.pull_params();
      std::fill(trainer.params().begin(), trainer.params().end(), std::nanf(""));
      trainer.push_params();
    }
    const StepResult r = trainer.step(hook);
    check_finite(r, s + 1, last_checkpoint, groups.world.comm);
    iterations.push_back({{"step", s + 1}, {"loss", r.loss}, {"grad_norm", r.grad_norm},
                          {"time_s", r.time_s}});
    if (world_rank == 0 && !o.quiet)
      std::printf("step %4lld  loss %.6f  grad_norm %.4f  time %.1f ms\n",
                  static_cast<long long>(s + 1), r.loss, r.grad_norm, r.time_s * 1e3);
    int sig = 0;
    const bool stop = stop_requested_anywhere(groups.world.comm, &sig);
    if (!o.checkpoint_dir.empty() &&
        (last || stop || (o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0))) {
      save_checkpoint(o.checkpoint_dir, trainer, groups, plan_json.dump(), pf.model);
      last_checkpoint = "the last one is " + checkpoint_step_dir(o.checkpoint_dir, s + 1);
    }
    if (stop) {
      if (world_rank == 0)
        std::fprintf(stderr, "parallax: %s received: stopped after step %lld (checkpoint: %s)\n",
                     sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM", static_cast<long long>(s + 1),
                     o.checkpoint_dir.empty() ? "none, no --checkpoint-dir"
                                              : checkpoint_step_dir(o.checkpoint_dir, s + 1).c_str());
      break;
    }
  }

  // Throughput of this rank: recorded FLOPs (GEMMs, attention, element-wise, optimizer; with
  // recompute, what was re-run) over the step time, the first step excluded when there are more.
  double flops = 0;
  for (const auto& [name, s] : rec.stats())
    if (s.stream == Stream::compute || s.stream == Stream::optimizer) flops += s.flops;
  double time_s = 0;
  int64_t timed = 0;
  for (size_t i = iterations.size() > 1 ? 1 : 0; i < iterations.size(); ++i, ++timed)
    time_s += iterations[i].at("time_s").get<double>();
  json throughput = {{"flops_per_step_rank0", flops / static_cast<double>(o.steps)},
                     {"mean_step_time_s", time_s / static_cast<double>(std::max<int64_t>(timed, 1))},
                     {"steps_timed", timed}};
  throughput["achieved_flop_per_s_rank0"] =
      throughput["flops_per_step_rank0"].get<double>() / throughput["mean_step_time_s"].get<double>();
  if (o.gemm_peak && !cuda) {
    const double peak = kernels::measure_sgemm_peak_flop_per_s(1024, 5);
    throughput["sgemm_peak_flop_per_s"] = peak;
    throughput["sgemm_peak_shape"] = "1024x1024x1024";
    throughput["fraction_of_sgemm_peak"] = throughput["achieved_flop_per_s_rank0"].get<double>() / peak;
    if (world_rank == 0 && !o.quiet)
      std::printf("step %.1f ms, %.1f GFLOP/s = %.1f%% of the sgemm peak %.1f GFLOP/s (%s)\n",
                  throughput["mean_step_time_s"].get<double>() * 1e3,
                  throughput["achieved_flop_per_s_rank0"].get<double>() / 1e9,
                  100.0 * throughput["fraction_of_sgemm_peak"].get<double>(), peak / 1e9,
                  kernels::openblas_core_name().c_str());
  }
  // Parameter bytes per tensor family from the size table the memory model is tested against,
  // and the flat allocations as they are (fp32; Adam m, v on the own shard with ZeRO-1).
  json mine = rank_measurements(rec, groups);
  json families = json::object();
  for (const auto& t : trainer.tensors())
    families[to_string(t.family)] = families.value(to_string(t.family), 0.0) +
                                    (cuda ? 2.0 : 4.0) * static_cast<double>(t.numel());
  mine["param_bytes_by_family"] = families;
  const json memory = trainer.memory_json();
  mine["flat_bytes"] = memory.at("flat_bytes");
  if (!memory.at("device").empty()) mine["device"] = memory.at("device");
  const std::vector<json> ranks = gather_json(mine, groups.world);
  std::vector<json> traces;
  if (!o.trace_path.empty()) traces = gather_json(rank_trace_events(rec, groups), groups.world);
  if (world_rank == 0) {
    if (!o.out_path.empty()) {
      const std::time_t now = std::time(nullptr);
      char date[32];
      std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
      json machine = machine_json(threads);
      if (backend_info.contains("cuda")) machine["cuda"] = backend_info.at("cuda");
      json m = {{"parallax_measurements_version", 1},
                {"date", date},
                {"plan", plan_json},
                {"executed_dtype", backend_info.at("executed_dtype")},
                {"backend", trainer.backend()},
                {"world_size", world_size},
                {"machine", machine},
                {"gemm_path", backend_info.at("gemm_path")},
                {"precision", backend_info.value("precision", std::string("fp32 throughout"))},
                {"data", o.data_path.empty() ? "synthetic" : o.data_path},
                {"seed", o.seed},
                {"parameters_per_rank", trainer.numel()},
                {"iterations", iterations},
                {"throughput", throughput},
                {"ranks", ranks}};
      write_file_atomic(o.out_path, m.dump(1) + "\n");
    }
    if (!o.trace_path.empty()) {
      json ev = json::array();
      for (const auto& t : traces)
        for (const auto& e : t) ev.push_back(e);
      write_file_atomic(o.trace_path, json{{"traceEvents", ev}, {"displayTimeUnit", "ms"}}.dump() + "\n");
    }
  }
  free_process_groups(groups);
}

}  // namespace parallax::exec
