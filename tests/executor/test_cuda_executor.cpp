// The CUDA backend's training against the CPU backend's (fp32) on gpt-tiny, at bf16
// tolerances: the first step's loss and logits and every gradient tensor (reassembled by name),
// and five steps of losses, for the single process and the parallel plans. Needs CUDA devices,
// one per rank: ctest label gpu, run by scripts/test-gpu (PARALLAX_GPU_TESTS=ON). A plan that
// needs more GPUs than the machine has is reported with a warning naming it (ctest -V shows it).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mpi_run.hpp"
#include "parallax/kernels/cuda/device.hpp"

using namespace parallax::test;

namespace {

struct Run {
  std::vector<double> losses;
  std::map<std::string, parallax::exec::GlobalTensor> grads;
};

Run run_plan(const std::string& dir, const std::string& name, int tp, int pp, int dp,
             const std::string& flags, const std::string& backend,
             const std::string& model = "gpt-tiny") {
  const std::string plan = make_plan(dir, name, tp, pp, dp, flags, model);
  const std::string out = dir + "/" + name + "_" + backend;
  const int rc = mpirun(tp * pp * dp,
                        "--backend " + backend + " --plan " + plan + " --steps 5 --out " + out +
                            ".m.json --dump-grads " + out + ".grads",
                        out + ".log");
  INFO(slurp(out + ".log"));
  REQUIRE(rc == 0);
  return {losses(out + ".m.json"), parallax::exec::read_global_tensors(out + ".grads")};
}

// bf16 weights and activations against fp32: loss within 1% (relative), every tensor within
// 5% of its largest reference magnitude (logits 3%).
void require_close(const Run& ref, const Run& got) {
  REQUIRE(got.losses.size() == ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    INFO("step " << i + 1 << ": " << got.losses[i] << " vs " << ref.losses[i]);
    CHECK(std::abs(got.losses[i] - ref.losses[i]) <= 1e-2 * std::abs(ref.losses[i]));
  }
  REQUIRE(got.grads.size() == ref.grads.size());
  for (const auto& [name, r] : ref.grads) {
    INFO("tensor " << name);
    REQUIRE(got.grads.count(name) == 1);
    const auto& g = got.grads.at(name);
    const size_t n = std::min(g.data.size(), r.data.size());  // logits: DP rank 0's rows
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < n; ++i) {
      max_ref = std::max(max_ref, static_cast<double>(std::abs(r.data[i])));
      max_err = std::max(max_err, static_cast<double>(std::abs(g.data[i] - r.data[i])));
    }
    INFO("normalised error " << max_err / std::max(max_ref, 1e-30));
    CHECK(max_err <= (name == "logits" ? 3e-2 : 5e-2) * max_ref);
  }
}

const Run& cpu_reference() {
  static const Run ref = run_plan(scratch_dir("cuda_ref"), "ref", 1, 1, 1, "", "cpu");
  return ref;
}

bool have_gpus(int n, const std::string& plan) {
  const int found = parallax::kernels::cuda::device_count();
  REQUIRE(found > 0);  // label gpu: run on a GPU machine only
  if (found >= n) return true;
  WARN("NOT RUN: " << plan << " needs " << n << " GPUs, this machine has " << found);
  return false;
}

}  // namespace

TEST_CASE("cuda single process equals the cpu backend at bf16 tolerance", "[gpu][executor]") {
  if (!have_gpus(1, "single process")) return;
  const std::string dir = scratch_dir("cuda_single");
  require_close(cpu_reference(), run_plan(dir, "single", 1, 1, 1, "", "cuda"));
  require_close(cpu_reference(), run_plan(dir, "full", 1, 1, 1, "--recompute full", "cuda"));
  require_close(cpu_reference(), run_plan(dir, "selective", 1, 1, 1, "--recompute selective", "cuda"));
}

TEST_CASE("cuda llama-tiny (RoPE, grouped-query attention, SwiGLU, RMSNorm) at bf16 tolerance",
          "[gpu][executor]") {
  if (!have_gpus(2, "llama-tiny tp=2")) return;
  const std::string dir = scratch_dir("cuda_llama");
  const Run ref = run_plan(dir, "ref", 1, 1, 1, "", "cpu", "llama-tiny");
  require_close(ref, run_plan(dir, "single", 1, 1, 1, "--recompute selective", "cuda", "llama-tiny"));
  require_close(ref, run_plan(dir, "tp2_sp", 2, 1, 1, "--sp", "cuda", "llama-tiny"));
}

TEST_CASE("cuda tp=2 (with and without sequence parallelism) at bf16 tolerance", "[gpu][executor]") {
  if (!have_gpus(2, "tp=2")) return;
  const std::string dir = scratch_dir("cuda_tp2");
  require_close(cpu_reference(), run_plan(dir, "tp2", 2, 1, 1, "", "cuda"));
  require_close(cpu_reference(), run_plan(dir, "tp2_sp", 2, 1, 1, "--sp", "cuda"));
}

TEST_CASE("cuda pp=2 GPipe and 1F1B at bf16 tolerance", "[gpu][executor]") {
  if (!have_gpus(2, "pp=2")) return;
  const std::string dir = scratch_dir("cuda_pp2");
  require_close(cpu_reference(), run_plan(dir, "gpipe", 1, 2, 1, "--schedule gpipe", "cuda"));
  require_close(cpu_reference(), run_plan(dir, "1f1b", 1, 2, 1, "--schedule 1f1b --recompute selective", "cuda"));
}

TEST_CASE("cuda dp=2 with and without ZeRO-1 at bf16 tolerance", "[gpu][executor]") {
  if (!have_gpus(2, "dp=2")) return;
  const std::string dir = scratch_dir("cuda_dp2");
  require_close(cpu_reference(), run_plan(dir, "dp2", 1, 1, 2, "", "cuda"));
  require_close(cpu_reference(), run_plan(dir, "dp2_zero1", 1, 1, 2, "--zero 1", "cuda"));
}

TEST_CASE("cuda interleaved pp=2 vpp=2 and tp=2 pp=2 dp=2 at bf16 tolerance", "[gpu][executor]") {
  if (have_gpus(4, "tp=2 pp=2 interleaved vpp=2")) {
    const std::string dir = scratch_dir("cuda_interleaved");
    require_close(cpu_reference(), run_plan(dir, "t2p2v2", 2, 2, 1, "--schedule interleaved --vpp 2", "cuda"));
  }
  if (have_gpus(8, "tp=2 pp=2 dp=2")) {
    const std::string dir = scratch_dir("cuda_t2p2d2");
    require_close(cpu_reference(), run_plan(dir, "t2p2d2", 2, 2, 2, "--zero 1 --recompute full --sp", "cuda"));
  }
}

TEST_CASE("cuda with one visible GPU per rank (CUDA_VISIBLE_DEVICES=$LOCAL_RANK) trains dp=2",
          "[gpu][executor]") {
  // What srun --gpus-per-task=1 and per-rank wrappers do: each rank sees one device, its own;
  // the backend takes it rather than refusing 2 ranks on a node of "1 device".
  if (!have_gpus(2, "dp=2 with one visible device per rank")) return;
  const std::string dir = scratch_dir("cuda_visible");
  const std::string plan = make_plan(dir, "dp2", 1, 1, 2, "");
  const std::string wrapper = dir + "/one_gpu.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nCUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec \"$@\"\n";
  REQUIRE(shell("chmod +x " + wrapper) == 0);
  const std::string out = dir + "/dp2";
  const int rc = shell(mpiexec() + " --allow-run-as-root --oversubscribe -np 2 " + wrapper + " " +
                       parallax_bin() + " run --quiet --backend cuda --plan " + plan + " --steps 5 --out " + out +
                       ".m.json --dump-grads " + out + ".grads > " + out + ".log 2>&1");
  INFO(slurp(out + ".log"));
  REQUIRE(rc == 0);
  require_close(cpu_reference(), {losses(out + ".m.json"), parallax::exec::read_global_tensors(out + ".grads")});
}

TEST_CASE("cuda checkpoint: save at step 3 and resume equals the uninterrupted run", "[gpu][executor]") {
  if (!have_gpus(1, "checkpoint resume")) return;
  const std::string dir = scratch_dir("cuda_ckpt");
  const std::string plan = make_plan(dir, "p", 1, 1, 1, "");
  REQUIRE(mpirun(1, "--backend cuda --plan " + plan + " --steps 5 --out " + dir + "/full.json", dir + "/full.log") == 0);
  REQUIRE(mpirun(1, "--backend cuda --plan " + plan + " --steps 3 --checkpoint-dir " + dir + "/ck", dir + "/a.log") == 0);
  REQUIRE(mpirun(1, "--backend cuda --plan " + plan + " --steps 2 --resume --checkpoint-dir " + dir +
                        "/ck --out " + dir + "/resumed.json", dir + "/b.log") == 0);
  const auto full = losses(dir + "/full.json"), resumed = losses(dir + "/resumed.json");
  REQUIRE(resumed.size() == 2);
  // fp32 master weights and Adam state round-trip exactly; the bf16 copy is recast from them;
  // every kernel is deterministic (no atomics) and cuBLAS is on one device: the same bits.
  CHECK(resumed[0] == full[3]);
  CHECK(resumed[1] == full[4]);
}

TEST_CASE("cuda: two TP replicas hold the same bits after 10 steps", "[gpu][executor]") {
  // Without sequence parallelism nothing all-reduces the replicated tensors' gradients over TP:
  // each rank computes them, and only deterministic kernels keep them equal (replica_check.hpp).
  if (!have_gpus(2, "tp=2 replicas")) return;
  const std::string dir = scratch_dir("cuda_replicas");
  for (const std::string flags : {"", "--sp"}) {
    INFO("flags: " << flags);
    const std::string name = flags.empty() ? "tp" : "sp";
    const std::string plan = make_plan(dir, name, 2, 1, 1, flags);
    const std::string out = dir + "/" + name + ".json";
    const int rc = mpirun(2, "--backend cuda --plan " + plan + " --steps 10 --out " + out, dir + "/" + name + ".log");
    INFO(slurp(dir + "/" + name + ".log"));
    REQUIRE(rc == 0);
    std::ifstream in(out);
    const auto m = nlohmann::json::parse(in);
    CHECK(m.at("tp_replicas") == "identical");
  }
}

TEST_CASE("cuda interleaved pp=2 vpp=2: the first step completes within 120 s", "[gpu][executor]") {
  // The first step is where lazy module loading and NCCL's lazy p2p connections would block the
  // host while sends spin on other streams (docs/cuda-backend.md): a deadlock shows as a timeout.
  if (!have_gpus(2, "pp=2 interleaved first step")) return;
  const std::string dir = scratch_dir("cuda_first_step");
  const std::string plan = make_plan(dir, "p2v2", 1, 2, 1, "--schedule interleaved --vpp 2");
  const std::string log = dir + "/p2v2.log";
  const int rc = shell("timeout 120 " + mpirun_command(2, "--backend cuda --plan " + plan + " --steps 1", log));
  INFO(slurp(log));
  CHECK(rc == 0);
}

TEST_CASE("cuda calibrate: a cuBLAS and NCCL sweep fits a bf16 profile that predict accepts",
          "[gpu][calibration]") {
  const int gpus = parallax::kernels::cuda::device_count();
  REQUIRE(gpus > 0);
  const std::string dir = scratch_dir("cuda_calibrate");
  const int np = std::min(gpus, 2);
  const std::string profile = dir + "/a100-sweep.json";
  const int rc = shell(parallax_bin() + " calibrate --backend cuda --cluster dgx-a100-superpod --np " +
                       std::to_string(np) + " --model gpt-25m --tp 1 --mbs 1 2 --repeats 5 --out " +
                       profile + " > " + dir + "/cal.log 2>&1");
  INFO(slurp(dir + "/cal.log"));
  REQUIRE(rc == 0);
  const auto p = nlohmann::json::parse(slurp(profile));
  CHECK(p.at("provenance").at("backend") == "cuda");
  // gpt-25m at tp 1, two micro-batch sizes: 5 GEMMs x forward, dgrad, wgrad, per size.
  CHECK(p.at("gemm_efficiency_by_shape").size() == 30);
  for (const auto& g : p.at("gemm_efficiency_by_shape")) {
    CHECK(g.at("efficiency").get<double>() > 0.0);
    CHECK(g.at("efficiency").get<double>() <= 1.0);
  }
  if (np >= 2) CHECK(!p.at("communication").empty());
  REQUIRE(shell(parallax_bin() + " predict --model gpt-25m --cluster dgx-a100-superpod --gpus 1" +
                " --global-batch 8 --mbs 1 --profile " + profile + " > " + dir + "/predict.log 2>&1") == 0);
  // A CUDA run's measurements.json is one compare reads (executed_dtype bf16) against the sweep.
  const std::string plan = make_plan(dir, "p", 1, 1, 1, "");
  REQUIRE(mpirun(1, "--backend cuda --plan " + plan + " --steps 3 --out " + dir + "/m.json", dir + "/run.log") == 0);
  REQUIRE(shell(parallax_bin() + " compare --measurements " + dir + "/m.json --profile " +
                profile + " > " + dir + "/compare.log 2>&1") == 0);
  CHECK(slurp(dir + "/compare.log").find("step time") != std::string::npos);
}
