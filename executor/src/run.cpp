#include "parallax/executor/run.hpp"

#include <csignal>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/executor/checkpoint/checkpoint.hpp"
#include "parallax/executor/checkpoint/checkpoint_identity.hpp"
#include "parallax/executor/replica_check.hpp"
#include "parallax/executor/stop_signal.hpp"
#include "parallax/executor/trainer.hpp"
#include "parallax/kernels/gemm_path.hpp"
#include "run_faults.hpp"
#include "run_output.hpp"
#if defined(PARALLAX_HAVE_CUDA)
#include "parallax/executor/cuda_trainer.hpp"
#include "parallax/kernels/cuda/device.hpp"
#endif

namespace parallax::exec {

using nlohmann::json;

namespace {

// The mixtures of experts the CPU executor runs (moe_layer.hpp): dropless SwiGLU experts without
// biases, each expert's MLP sharded over tp as the dense one.
template <class Fail>
void check_runnable_moe(const ModelSpec& m, const PlanSpec& p, const Fail& fail) {
  const MoeSpec& e = m.moe;
  if (e.capacity_factor > 0) {
    std::ostringstream got;
    got << e.capacity_factor;
    fail("$.model.moe.capacity_factor",
         "the executor runs dropless mixtures of experts only: capacity_factor must be 0 (got " +
             got.str() + ")");
  }
  if (m.activation != Activation::swiglu)
    fail("$.model.activation", "the executor's experts are SwiGLU MLPs (got " +
                                   std::string(to_string(m.activation)) + ")");
  if (m.linear_bias)
    fail("$.model.linear_bias",
         "the executor's experts and router have no biases (linear_bias must be false)");
  if (e.expert_ffn_hidden % p.tp != 0)
    fail("$.plan.tp", "moe.expert_ffn_hidden must be divisible by tp");
  if ((e.shared_experts * e.shared_expert_ffn_hidden) % p.tp != 0)
    fail("$.plan.tp", "moe.shared_experts * moe.shared_expert_ffn_hidden must be divisible by tp");
  if (expert_tp(p) != p.tp)
    fail("$.plan.etp", "the executor shards each expert over tp as the dense MLP: etp must be 0 or tp");
  if (p.ep > 1 && p.zero != 0)
    fail("$.plan.zero", "with expert parallelism the executor runs ZeRO 0 (its ZeRO-1 shards one flat "
                        "buffer over dp, whose ranks hold other experts)");
}

// What the CPU executor can run beyond what validate_plan already checked.
void check_runnable(const PlanFile& pf, int world_size, const std::string& src) {
  const ModelSpec& m = pf.model;
  const PlanSpec& p = pf.plan;
  auto fail = [&](const std::string& path, const std::string& rule) {
    throw InputError(src, path, rule);
  };
  if (world_size != p.gpus())
    fail("$.plan", "the world size (" + std::to_string(world_size) +
                       " MPI ranks) must equal tp*cp*pp*dp = " + std::to_string(p.gpus()));
  if (m.position == Position::alibi)
    fail("$.model.position", "the executor runs learned or rope positions (got alibi)");
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
  if (m.is_moe()) check_runnable_moe(m, p, fail);
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
  if (const std::string loading = kernels::cuda::request_eager_module_loading(); loading != "EAGER")
    std::fprintf(stderr, "parallax: warning: CUDA_MODULE_LOADING=%s: a kernel's first launch may wait for "
                         "the device to go idle, which can stall a pipeline's first step (EAGER avoids it)\n",
                 loading.c_str());
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

// The plan file as read (its text goes into checkpoints and measurements.json) and as specs.
struct LoadedPlan {
  json text;
  PlanFile file;
};

LoadedPlan load_plan(const RunOptions& o, int world_size) {
  check_backend(o.backend);
  LoadedPlan lp{read_json_file(o.plan_path), {}};
  lp.file = read_plan_file(lp.text, o.plan_path);
  check_runnable(lp.file, world_size, o.plan_path);
  if (o.backend == "cuda" && lp.file.model.is_moe())
    throw InputError(o.plan_path, "$.model.moe.num_experts",
                     "the CUDA backend runs dense models only; mixtures of experts run on the CPU "
                     "backend (--backend cpu)");
  if (o.backend == "cuda" && lp.file.job.attention == Attention::fused)
    throw InputError(o.plan_path, "$.job.attention",
                     "the CUDA backend runs unfused attention only (cuBLAS scores and a softmax "
                     "kernel); fused attention is the CPU backend's blocked kernel");
  check_checkpoint_dir({o.checkpoint_dir, o.resume, o.resume_if_present}, lp.file.model);
  return lp;
}

std::unique_ptr<Trainer> make_trainer(const RunOptions& o, const PlanFile& pf, const ProcessGroups& groups,
                                      Recorder& rec, BackendInfo* info) {
  TokenSource data = o.data_path.empty()
                         ? TokenSource(o.seed, pf.model.vocab)
                         : TokenSource::from_file(o.data_path, pf.model.vocab, pf.model.seq_len);
  TrainOptions topt;
  topt.seed = o.seed;
  topt.grad_clip = static_cast<float>(o.grad_clip);
  topt.adam.lr = static_cast<float>(o.lr);
#if defined(PARALLAX_HAVE_CUDA)
  if (o.backend == "cuda") return make_cuda_trainer(pf, topt, groups, rec, std::move(data), info);
#endif
  info->gemm_path = kernels::gemm_path_description();
  return make_cpu_trainer(pf, topt, groups, rec, std::move(data));
}

// --resume / --resume-if-present: loads the newest complete checkpoint of this model. Returns what
// a failure message says of the checkpoints: the newest one written or loaded.
std::string resume(const RunOptions& o, Trainer& trainer, const ProcessGroups& groups) {
  std::string last = o.checkpoint_dir.empty() ? "no --checkpoint-dir, none written" : "none written yet";
  if (!o.resume && !o.resume_if_present) return last;
  if (load_latest_checkpoint(o.checkpoint_dir, trainer, groups))
    return "the last one is " + checkpoint_step_dir(o.checkpoint_dir, trainer.step_count());
  if (o.resume)
    throw InputError(o.checkpoint_dir, "--resume", "no complete checkpoint loads (see the warnings above)");
  if (groups.world.rank == 0)
    std::fprintf(stderr, "parallax: no checkpoint to resume in %s: starting from step 0\n",
                 o.checkpoint_dir.c_str());
  return last;
}

const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM";
}

// The step loop: --steps steps from where the trainer stands, checkpoints at the end, every
// --checkpoint-every steps and on a stop signal (which ends the loop after the current step).
std::vector<StepRecord> train(const RunOptions& o, const LoadedPlan& lp, Trainer& trainer,
                              const ProcessGroups& groups, std::string last_checkpoint) {
  const FaultInjection faults(o, groups.world.rank);
  const bool dump = !o.dump_grads_dir.empty();
  std::vector<StepRecord> steps;
  const int64_t first = trainer.step_count();
  for (int64_t s = first; s < first + o.steps; ++s) {
    std::function<void()> hook = faults.before_step(s, trainer);
    if (!hook && dump && s == first) hook = [&] { dump_gradients(o.dump_grads_dir, trainer, groups, lp.file.model); };
    trainer.capture_logits(dump && s == first);
    const StepResult r = trainer.step(hook);
    check_finite(r, s + 1, last_checkpoint, groups.world.comm);
    steps.push_back({s + 1, r.loss, r.grad_norm, r.time_s});
    if (groups.world.rank == 0 && !o.quiet)
      std::printf("step %4lld  loss %.6f  grad_norm %.4f  time %.1f ms\n",
                  static_cast<long long>(s + 1), r.loss, r.grad_norm, r.time_s * 1e3);
    int sig = 0;
    const bool stop = stop_requested_anywhere(groups.world.comm, &sig);
    const bool last = s + 1 == first + o.steps;
    if (!o.checkpoint_dir.empty() &&
        (last || stop || (o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0))) {
      save_checkpoint(o.checkpoint_dir, trainer, groups, lp.text.dump(), lp.file.model);
      last_checkpoint = "the last one is " + checkpoint_step_dir(o.checkpoint_dir, s + 1);
    }
    if (stop) {
      if (groups.world.rank == 0)
        std::fprintf(stderr, "parallax: %s received: stopped after step %lld (checkpoint: %s)\n",
                     signal_name(sig), static_cast<long long>(s + 1),
                     o.checkpoint_dir.empty() ? "none, no --checkpoint-dir"
                                              : checkpoint_step_dir(o.checkpoint_dir, s + 1).c_str());
      break;
    }
  }
  return steps;
}

// --gemm-peak (CPU backend): the sgemm peak of this machine beside the achieved rate.
void add_sgemm_peak(const RunOptions& o, int world_rank, Throughput* t) {
  const double peak = kernels::measure_sgemm_peak_flop_per_s(1024, 5);
  t->sgemm_peak_flop_per_s = peak;
  if (world_rank == 0 && !o.quiet)
    std::printf("step %.1f ms, %.1f GFLOP/s = %.1f%% of the sgemm peak %.1f GFLOP/s (%s)\n",
                t->mean_step_time_s * 1e3, t->achieved_flop_per_s_rank0 / 1e9,
                100.0 * t->achieved_flop_per_s_rank0 / peak, peak / 1e9, kernels::openblas_core_name().c_str());
}

// A TP group whose replicated tensors no longer hold the same bits (replica_check.hpp).
void warn_diverged(const std::vector<std::string>& names, const ProcessGroups& groups) {
  std::string list;
  for (const auto& n : names) {
    if (!list.empty()) list.append(", ");
    list.append(n);
  }
  std::fprintf(stderr,
               "parallax: warning: the TP replicas of world rank %d's group diverged: %s hold "
               "different bits on different TP ranks (a non-deterministic kernel?)\n",
               groups.world.rank, list.c_str());
}

}  // namespace

void run_plan(const RunOptions& o) {
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const LoadedPlan lp = load_plan(o, world_size);
  const int threads = threads_per_rank(o.threads);
  kernels::set_compute_threads(threads);

  OwnedProcessGroups owned(lp.file.plan, lp.file.model.tied_embeddings);
  const ProcessGroups& groups = owned.get();
  Recorder rec;
  BackendInfo backend;
  const std::unique_ptr<Trainer> trainer = make_trainer(o, lp.file, groups, rec, &backend);
  install_stop_handlers();
  const std::string last_checkpoint = resume(o, *trainer, groups);
  const std::vector<StepRecord> steps = train(o, lp, *trainer, groups, last_checkpoint);

  const std::vector<std::string> diverged = diverged_tp_replicas(*trainer, groups);
  if (!diverged.empty() && groups.tp.rank == 0) warn_diverged(diverged, groups);
  Throughput throughput = measure_throughput(rec, steps, static_cast<int64_t>(steps.size()));
  if (o.gemm_peak && o.backend != "cuda") add_sgemm_peak(o, groups.world.rank, &throughput);
  write_run_outputs(o, lp.text, threads, backend, steps, throughput, *trainer, rec, groups, diverged);
}

}  // namespace parallax::exec
