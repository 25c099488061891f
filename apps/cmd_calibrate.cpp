// parallax calibrate: fits an efficiency profile (docs/design.md §9).
//   --backend cpu [--np N]: microbenchmarks of the executor's kernels and MPI collectives, run
//     under mpirun as N ranks (one per core by default), fitted against the cluster preset.
//   --backend cuda --cluster C [--np N]: cuBLAS GEMM sweep on the model shapes and NCCL
//     collective sweep over N ranks (one per GPU), fitted against C's GPU; the rest of the
//     profile comes from C's default profile.
//   --from measurements.json (repeatable): refit from executed runs.
//   --from-nccl-tests FILE (repeatable) [--collective NAME]: collective fits from nccl-tests output.
//   --from-megatron-log FILE --plan plan.json: the plan's stack scale from a training log.
// The profile is written atomically; on any error nothing is written.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "blas_env.hpp"
#include "commands.hpp"
#include "text_input.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/fit.hpp"
#include "parallax/calibration/machine.hpp"
#include "parallax/calibration/sweep.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/dense_only.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/core/presets.hpp"
#if defined(PARALLAX_HAVE_CUDA)
#include "parallax/executor/cuda_trainer.hpp"
#endif

namespace parallax::cli {

namespace {

struct CalibrateOptions {
  calib::SweepOptions sweep;  // --backend, --np (0 here = the default), --model, --tp, --mbs, ...
  std::string cluster;        // cpu: cpu-local by default; cuda: required
  std::vector<std::string> from;
  std::vector<std::string> from_nccl;
  std::string collective;  // --collective: for nccl-tests output that does not name its binary
  std::string from_log;
  std::string plan;
  std::string profile;
  std::string out;
  std::string name;
  std::string worker;   // internal: run as a rank of the sweep with this request file
  std::string raw_out;  // keep the raw microbenchmark results here
};

std::string self_exe() {
  char self[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : "parallax";
}

void print_summary(const EfficiencyProfile& p) {
  double lo = 1, hi = 0;
  for (const auto& g : p.gemm_efficiency_by_shape) lo = std::min(lo, g.efficiency), hi = std::max(hi, g.efficiency);
  if (!p.gemm_efficiency_by_shape.empty())
    std::printf("GEMM shapes      %zu, efficiency %.3f-%.3f of the fp32 peak\n",
                p.gemm_efficiency_by_shape.size(), lo, hi);
  for (const auto& [cls, e] : p.op_class_efficiency) std::printf("class %-16s %.4f of roofline\n", cls.c_str(), e);
  for (const CollectiveFit& f : p.communication) {
    const std::string layout = f.nodes > 0 ? " (" + std::to_string(f.nodes) + " x " +
                                                 std::to_string(f.ranks_per_node) + ")"
                                           : "";
    std::printf("%-14s %s %3lld ranks%s  alpha %8.2f us  busbw %8.3f GB/s   (%s)\n",
                to_string(f.collective), f.inter_node ? "inter" : "intra",
                static_cast<long long>(f.ranks), layout.c_str(), f.alpha_s * 1e6,
                f.busbw_bytes_per_s / 1e9, f.source.c_str());
  }
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

// --from, --from-nccl-tests, --from-megatron-log: the base profile refitted from what was measured.
EfficiencyProfile refit_profile(const CalibrateOptions& o) {
  std::vector<calib::Measurements> runs;
  for (const std::string& f : o.from) runs.push_back(calib::read_measurements(f));
  std::string base = o.profile;
  PlanFile plan;
  if (!o.from_log.empty()) plan = read_plan_file(read_json_file(o.plan), o.plan);
  if (base.empty()) {
    if (!runs.empty()) base = runs.front().plan.cluster.profile;
    else if (!o.from_log.empty()) base = plan.cluster.profile;
    else if (!o.cluster.empty()) base = load_cluster(o.cluster).profile;
    else
      throw InputError("command line", "--cluster",
                       "--from-nccl-tests without --profile updates the cluster's profile: name the "
                       "cluster (or the profile with --profile)");
  }
  EfficiencyProfile out = load_profile(base);
  if (!runs.empty()) out = calib::refit_from_measurements(out, runs);
  std::vector<std::string> warnings;
  for (const std::string& f : o.from_nccl)
    out = calib::refit_from_nccl_tests(out, calib::parse_nccl_tests(read_text(f), f), f, o.collective,
                                       &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "parallax: warning: %s\n", w.c_str());
  if (!o.from_log.empty())
    out = calib::refit_from_megatron_log(out, calib::parse_megatron_log(read_text(o.from_log), o.from_log), plan, o.from_log);
  out.provenance.date = calib::utc_date();
  if (out.provenance.machine.empty()) out.provenance.machine = "unknown";
  if (out.provenance.backend.empty()) out.provenance.backend = "cost model";
  if (!o.name.empty()) out.name = o.name;
  return out;
}

// --backend cpu|cuda: the microbenchmark sweep under mpirun, fitted against the cluster.
EfficiencyProfile measure_profile(const CalibrateOptions& o, int cuda_devices) {
  const bool cuda = o.sweep.backend == "cuda";
  calib::SweepOptions sweep = o.sweep;
  if (sweep.np == 0) sweep.np = cuda ? cuda_devices : calib::machine_cores();
  const ClusterSpec cluster = load_cluster(o.cluster);
  // Bad names, and models the kernels cannot run, fail before mpirun.
  for (const std::string& m : sweep.models) refuse_moe(load_model(m), "command line", "--model");
  const calib::RawCalibration raw = calib::run_sweep(sweep, {self_exe(), "calibrate", "--worker"}, o.raw_out);
  if (cuda) {
    const EfficiencyProfile base = load_profile(cluster.profile);
    return calib::fit_profile(raw, cluster, o.name.empty() ? cluster.name + "-cuda" : o.name,
                              "Microbenchmarks (parallax calibrate --backend cuda)", &base);
  }
  return calib::fit_profile(raw, cluster, o.name.empty() ? cluster.name : o.name,
                            "Microbenchmarks (parallax calibrate --backend cpu)");
}

int calibrate(CalibrateOptions o) {
  if (!o.worker.empty()) return run_as_mpi_rank([&](int) { calib::run_sweep_ranks(o.worker); });
  const bool refit = !o.from.empty() || !o.from_nccl.empty() || !o.from_log.empty();
  int cuda_devices = 0;
  if (o.sweep.backend == "cuda" && !refit) cuda_devices = check_cuda_calibration(o);
  if (o.cluster.empty() && !refit) o.cluster = "cpu-local";  // a refit's cluster comes from its input
  if (o.out.empty()) throw InputError("command line", "--out", "is required (the profile to write)");
  if (!o.from_log.empty() && o.plan.empty())
    throw InputError("command line", "--plan", "--from-megatron-log needs the plan that produced the log");
  if (o.from_log.empty() && !o.plan.empty())
    throw InputError("command line", "--plan", "is only used with --from-megatron-log");
  const EfficiencyProfile out = refit ? refit_profile(o) : measure_profile(o, cuda_devices);
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
  cmd->add_option("--backend", o->sweep.backend, "microbenchmark backend")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--np", o->sweep.np, "ranks to benchmark with (default: the cores)")->check(CLI::Range(1, 4096));
  cmd->add_option("--cluster", o->cluster, "cluster preset or file the profile is relative to (cpu default: cpu-local; required with --backend cuda; with --from-nccl-tests, its profile is the one refitted unless --profile names another)");
  cmd->add_option("--model", o->sweep.models, "model presets whose layer shapes to benchmark (repeatable)")->take_all();
  cmd->add_option("--tp", o->sweep.tps, "tensor-parallel degrees (default: 1..np dividing heads)")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--mbs", o->sweep.mbs, "micro-batch sizes (default 1 2 4 8)")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--repeats", o->sweep.repeats, "timed repeats per measurement")->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", o->sweep.warmup, "warm-up calls per measurement")->check(CLI::Range(0, 1000));
  cmd->add_option("--from", o->from, "measurements.json of an executed run (repeatable)");
  cmd->add_option("--from-nccl-tests", o->from_nccl, "nccl-tests output (repeatable)");
  cmd->add_option("--collective", o->collective,
                  "the collective of nccl-tests output that does not name its *_perf binary "
                  "(all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv; "
                  "default: read from the table; must agree with output that names it)");
  cmd->add_option("--from-megatron-log", o->from_log, "Megatron-LM / Megatron-DeepSpeed training log");
  cmd->add_option("--plan", o->plan, "the plan file that produced the Megatron-LM log");
  cmd->add_option("--profile", o->profile, "profile to refit (default: the cluster's: --cluster, or the plan's of --from / --plan)");
  cmd->add_option("--name", o->name, "name of the written profile");
  cmd->add_option("--out", o->out, "profile JSON to write");
  cmd->add_option("--raw-out", o->raw_out, "also keep the raw microbenchmark results (JSON)");
  cmd->add_option("--worker", o->worker, "internal: a rank of the sweep (its request file)")->group("");
  cmd->callback([o, &exit_code] { exit_code = calibrate(*o); });
}

}  // namespace parallax::cli
