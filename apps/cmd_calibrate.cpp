// parallax calibrate: fits an efficiency profile (DESIGN.md §9).
//   --backend cpu [--np N]: microbenchmarks of the executor's kernels and MPI collectives, run
//     under mpirun as N ranks (one per core by default), fitted against the cluster preset.
//   --backend cuda --cluster C [--np N]: cuBLAS GEMM sweep on the model shapes and NCCL
//     collective sweep over N ranks (one per GPU), fitted against C's GPU; the rest of the
//     profile comes from C's default profile.
//   --from measurements.json (repeatable): refit from executed runs.
//   --from-nccl-tests FILE (repeatable): collective fits from nccl-tests output.
//   --from-megatron-log FILE --plan plan.json: the plan's stack scale from a training log.
// The profile is written atomically; on any error nothing is written.
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "blas_env.hpp"
#include "commands.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/cpu_microbench.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/memory.hpp"
#include "parallax/executor/measurements.hpp"
#include "parallax/kernels/gemm_path.hpp"
#if defined(PARALLAX_HAVE_CUDA)
#include "parallax/calibration/cuda_microbench.hpp"
#include "parallax/executor/cuda_trainer.hpp"
#include "parallax/kernels/cuda/device.hpp"
#endif

namespace parallax::cli {

namespace {

struct CalibrateOptions {
  std::string backend = "cpu";
  int np = 0;
  std::string cluster;  // cpu: cpu-local by default; cuda: required
  std::vector<std::string> models = {"gpt-tiny", "gpt-25m"};
  std::vector<int64_t> tps;
  std::vector<int64_t> mbs = {1, 2, 4, 8};
  int repeats = 5;
  int warmup = 2;
  std::vector<std::string> from;
  std::vector<std::string> from_nccl;
  std::string from_log;
  std::string plan;
  std::string profile;
  std::string out;
  std::string name;
  std::string worker_raw;  // internal: run as the MPI worker and write raw results here
  std::string raw_out;     // keep the raw microbenchmark results here
};

std::string today() {
  const std::time_t now = std::time(nullptr);
  char d[32];
  std::strftime(d, sizeof(d), "%Y-%m-%d", std::gmtime(&now));
  return d;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "$", "cannot read file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string self_exe() {
  char self[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : "parallax";
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Default tensor-parallel degrees: those dividing every model's heads and FFN, up to the ranks
// (cpu: a shape's rank count is what the run has) or up to 8 (cuda: a GPU node's usual TP).
std::vector<int64_t> tp_list(const CalibrateOptions& o, const std::vector<ModelSpec>& models) {
  if (!o.tps.empty()) return o.tps;
  std::vector<int64_t> out;
  const int64_t top = o.backend == "cuda" ? 8 : std::max(1, o.np);
  for (int64_t t = 1; t <= top; t = o.backend == "cuda" ? 2 * t : t + 1) {
    bool ok = true;
    for (const ModelSpec& m : models) ok = ok && m.heads % t == 0 && m.ffn_hidden % t == 0;
    if (ok) out.push_back(t);
  }
  return out;
}

void bench_collectives(const CalibrateOptions& o, int rank, int size, calib::RawCalibration& raw) {
  calib::BenchOptions bo;
  bo.repeats = o.repeats;
  bo.warmup = o.warmup;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::fprintf(stderr, "calibrate: collectives over %d ranks\n", size);
  std::vector<double> sizes;
  for (double b = 4096; b <= 64.0 * 1024 * 1024; b *= 4) sizes.push_back(b);
#if defined(PARALLAX_HAVE_CUDA)
  if (o.backend == "cuda") {
    raw.comm = calib::bench_comm_cuda(MPI_COMM_WORLD, sizes, bo);
    return;
  }
#endif
  bo.caches = calib::read_cache_sizes();  // flushed before each call
  raw.comm = calib::bench_comm(MPI_COMM_WORLD, sizes, bo);
}

// Under mpirun. cpu: every rank benchmarks its kernels at once (the node busy as in a run), then
// the collectives. cuda: each rank takes the GPU of its local rank; rank 0 sweeps the GEMMs (the
// GPUs do not share compute), then all sweep the collectives. Rank 0 writes what it measured.
int worker(const CalibrateOptions& o) {
  return run_as_mpi_rank([&](int rank) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool cuda = o.backend == "cuda";
    std::vector<ModelSpec> models;
    for (const std::string& m : o.models) models.push_back(load_model(m));
    calib::BenchOptions bo;
    bo.repeats = o.repeats;
    bo.warmup = o.warmup;
    calib::RawCalibration raw;
    raw.backend = o.backend;
    raw.ranks = size;
    raw.date = today();
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    CalibrateOptions opts = o;
    opts.np = size;
    auto each_shape = [&](auto&& bench) {
      for (const ModelSpec& m : models)
        for (int64_t tp : tp_list(opts, models))
          for (int64_t mb : o.mbs) {
            bench(m, tp, mb);
            if (rank == 0)
              std::fprintf(stderr, "calibrate: %s tp %lld mbs %lld\n", m.name.c_str(),
                           static_cast<long long>(tp), static_cast<long long>(mb));
          }
    };
    if (cuda) {
#if defined(PARALLAX_HAVE_CUDA)
      const int device = exec::select_cuda_device();
      raw.threads_per_rank = 1;
      raw.gemm_path = "cuBLAS cublasGemmEx (CUDA " + kernels::cuda::runtime_version() +
                      "), bf16 operands, fp32 accumulation";
      raw.machine = {{"host", host}, {"device", kernels::cuda::device_description(device)}};
      if (rank == 0)
        each_shape([&](const ModelSpec& m, int64_t tp, int64_t mb) {
          raw.compute.push_back(calib::bench_compute_cuda(m, tp, mb, bo));
        });
#endif
    } else {
      const double overhead_bytes = exec::peak_resident_bytes();
      const int threads = std::max(1, cores() / size);
      kernels::set_compute_threads(threads);
      raw.threads_per_rank = threads;
      raw.gemm_path = kernels::gemm_path_description();
      raw.machine = {{"host", host}, {"cores", cores()}, {"threads_per_rank", threads},
                     {"process_overhead_bytes", overhead_bytes}};
      bo.caches = calib::read_cache_sizes();
      raw.machine["caches"] = bo.caches.description;
      raw.machine["llc_bytes"] = bo.caches.llc_bytes;
      raw.machine["llc_cpus"] = bo.caches.llc_cpus;
      each_shape([&](const ModelSpec& m, int64_t tp, int64_t mb) {
        raw.compute.push_back(calib::bench_compute(m, tp, mb, bo, MPI_COMM_WORLD));
      });
      for (const ModelSpec& m : models)
        for (int64_t tp : tp_list(opts, models)) {
          PlanSpec p;
          p.tp = tp;
          MPI_Barrier(MPI_COMM_WORLD);
          raw.optimizer.push_back(calib::bench_optimizer(
              static_cast<int64_t>(stage_params_per_rank(m, p, 0)), bo));
        }
    }
    bench_collectives(o, rank, size, raw);
    if (rank == 0) write_file_atomic(o.worker_raw, calib::to_json(raw).dump(1) + "\n");
  });
}

// Runs the worker under mpirun and waits; returns the raw results.
calib::RawCalibration run_microbenchmarks(const CalibrateOptions& o) {
  const std::string raw_path = "/tmp/parallax-calibrate-" + std::to_string(getpid()) + ".json";
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(o.np)};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (o.np > cores()) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), {self_exe(), "calibrate", "--worker-raw", raw_path, "--out", o.out,
                           "--backend", o.backend,
                           "--repeats", std::to_string(o.repeats), "--warmup", std::to_string(o.warmup)});
  for (const std::string& m : o.models) argv.insert(argv.end(), {"--model", m});
  for (int64_t t : o.tps) argv.insert(argv.end(), {"--tp", std::to_string(t)});
  for (int64_t b : o.mbs) argv.insert(argv.end(), {"--mbs", std::to_string(b)});
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    std::perror("parallax: calibrate: cannot execute mpirun");
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(raw_path.c_str());
    throw InputError("calibrate", "mpirun", "the microbenchmark ranks failed (exit status " +
                                                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                                "); see the messages above");
  }
  const nlohmann::json j = read_json_file(raw_path);
  std::remove(raw_path.c_str());
  if (!o.raw_out.empty()) write_file_atomic(o.raw_out, j.dump(1) + "\n");
  return calib::raw_from_json(j, raw_path);
}

void print_summary(const EfficiencyProfile& p) {
  double lo = 1, hi = 0;
  for (const auto& g : p.gemm_efficiency_by_shape) lo = std::min(lo, g.efficiency), hi = std::max(hi, g.efficiency);
  if (!p.gemm_efficiency_by_shape.empty())
    std::printf("GEMM shapes      %zu, efficiency %.3f-%.3f of the fp32 peak\n",
                p.gemm_efficiency_by_shape.size(), lo, hi);
  for (const auto& [cls, e] : p.op_class_efficiency) std::printf("class %-16s %.4f of roofline\n", cls.c_str(), e);
  for (const CollectiveFit& f : p.communication)
    std::printf("%-14s %s %3lld ranks  alpha %8.2f us  busbw %8.3f GB/s   (%s)\n",
                to_string(f.collective), f.inter_node ? "inter" : "intra",
                static_cast<long long>(f.ranks), f.alpha_s * 1e6, f.busbw_bytes_per_s / 1e9,
                f.source.c_str());
  for (const auto& [fw, s] : p.frameworks)
    std::printf("framework %-16s compute scale %.4f\n", fw.c_str(), s.compute_efficiency_scale);
}

// --backend cuda needs a device (checked first, as `run` does: a machine without a GPU gets one
// line and exit code 2 whatever else is wrong) and names the GPU cluster explicitly.
// Returns the devices of this node (the default --np).
int check_cuda_calibration(const CalibrateOptions& o) {
#if defined(PARALLAX_HAVE_CUDA)
  std::string why;
  const int devices = exec::cuda_device_count(&why);
  if (devices == 0)
    throw InputError("command line", "--backend cuda", "no CUDA device (" + why + ")");
  if (o.cluster.empty())
    throw InputError("command line", "--cluster",
                     "is required with --backend cuda (the GPU cluster the profile is relative to)");
  return devices;
#else
  (void)o;
  throw InputError("command line", "--backend cuda",
                   "this parallax was built without the CUDA backend (PARALLAX_CUDA=OFF)");
#endif
}

int calibrate(CalibrateOptions o) {
  if (!o.worker_raw.empty()) return worker(o);
  const bool cuda = o.backend == "cuda";
  int cuda_devices = 0;
  if (cuda && o.from.empty() && o.from_nccl.empty() && o.from_log.empty())
    cuda_devices = check_cuda_calibration(o);
  if (o.cluster.empty()) o.cluster = "cpu-local";
  if (o.out.empty()) throw InputError("command line", "--out", "is required (the profile to write)");
  const bool refit = !o.from.empty() || !o.from_nccl.empty() || !o.from_log.empty();
  if (!o.from_log.empty() && o.plan.empty())
    throw InputError("command line", "--plan", "--from-megatron-log needs the plan that produced the log");
  if (o.from_log.empty() && !o.plan.empty())
    throw InputError("command line", "--plan", "is only used with --from-megatron-log");
  EfficiencyProfile out;
  if (refit) {
    std::vector<calib::Measurements> runs;
    for (const std::string& f : o.from) runs.push_back(calib::read_measurements(f));
    std::string base = o.profile;
    PlanFile plan;
    if (!o.from_log.empty()) plan = read_plan_file(read_json_file(o.plan), o.plan);
    if (base.empty()) {
      if (!runs.empty()) base = runs.front().plan.cluster.profile;
      else if (!o.from_log.empty()) base = plan.cluster.profile;
      else throw InputError("command line", "--profile", "--from-nccl-tests needs the profile to update");
    }
    out = load_profile(base);
    if (!runs.empty()) out = calib::refit_from_measurements(out, runs);
    for (const std::string& f : o.from_nccl)
      out = calib::refit_from_nccl_tests(out, parse_nccl_tests(read_text(f), f), f);
    if (!o.from_log.empty())
      out = calib::refit_from_megatron_log(out, parse_megatron_log(read_text(o.from_log), o.from_log), plan, o.from_log);
    out.provenance.date = today();
    if (out.provenance.machine.empty()) out.provenance.machine = "unknown";
    if (out.provenance.backend.empty()) out.provenance.backend = "cost model";
    if (!o.name.empty()) out.name = o.name;
  } else {
    if (o.np == 0) o.np = cuda ? cuda_devices : cores();
    const ClusterSpec cluster = load_cluster(o.cluster);
    for (const std::string& m : o.models) (void)load_model(m);  // bad names fail before mpirun
    const calib::RawCalibration raw = run_microbenchmarks(o);
    if (cuda) {
      const EfficiencyProfile base = load_profile(cluster.profile);
      out = calib::fit_profile(raw, cluster, o.name.empty() ? cluster.name + "-cuda" : o.name,
                               "Microbenchmarks (parallax calibrate --backend cuda)", &base);
    } else {
      out = calib::fit_profile(raw, cluster, o.name.empty() ? cluster.name : o.name,
                               "Microbenchmarks (parallax calibrate --backend cpu)");
    }
  }
  // The profile must read back as valid before it replaces anything.
  const nlohmann::json j = to_json(out);
  JsonObjectReader check(j, o.out);
  (void)read_profile(check);
  write_file_atomic(o.out, j.dump(2) + "\n");
  print_summary(out);
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit an efficiency profile from microbenchmarks, executed runs, nccl-tests output or Megatron-LM logs");
  cmd->add_option("--backend", o->backend, "microbenchmark backend")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--np", o->np, "ranks to benchmark with (default: the cores)")->check(CLI::Range(1, 4096));
  cmd->add_option("--cluster", o->cluster, "cluster preset or file the profile is relative to (cpu default: cpu-local; required with --backend cuda)");
  cmd->add_option("--model", o->models, "model presets whose layer shapes to benchmark (repeatable)")->take_all();
  cmd->add_option("--tp", o->tps, "tensor-parallel degrees (default: 1..np dividing heads)")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--mbs", o->mbs, "micro-batch sizes (default 1 2 4 8)")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--repeats", o->repeats, "timed repeats per measurement")->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", o->warmup, "warm-up calls per measurement")->check(CLI::Range(0, 1000));
  cmd->add_option("--from", o->from, "measurements.json of an executed run (repeatable)");
  cmd->add_option("--from-nccl-tests", o->from_nccl, "nccl-tests output (repeatable)");
  cmd->add_option("--from-megatron-log", o->from_log, "Megatron-LM / Megatron-DeepSpeed training log");
  cmd->add_option("--plan", o->plan, "the plan file that produced the Megatron-LM log");
  cmd->add_option("--profile", o->profile, "profile to refit (default: the cluster's)");
  cmd->add_option("--name", o->name, "name of the written profile");
  cmd->add_option("--out", o->out, "profile JSON to write");
  cmd->add_option("--raw-out", o->raw_out, "also keep the raw microbenchmark results (JSON)");
  cmd->add_option("--worker-raw", o->worker_raw, "internal")->group("");
  cmd->callback([o, &exit_code] { exit_code = calibrate(*o); });
}

}  // namespace parallax::cli
