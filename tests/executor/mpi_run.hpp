#pragma once
// Drives the real binary: writes plan files with `parallax predict --out` and runs
// `mpirun -np N parallax run ...`, then reads measurements.json and gradient dumps.
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/executor/checkpoint/checkpoint.hpp"

namespace parallax::test {

// The parallax binary and the mpirun the tests drive: the build's (PARALLAX_BIN, MPIEXEC), or
// where PARALLAX_TEST_BIN and PARALLAX_TEST_MPIEXEC name others: a GPU kit's copies
// (scripts/gpu-kit), which live wherever the kit was unpacked.
inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
inline std::string parallax_bin() { return env_or("PARALLAX_TEST_BIN", PARALLAX_BIN); }
inline std::string mpiexec() { return env_or("PARALLAX_TEST_MPIEXEC", MPIEXEC); }

// A test's scratch folder, one per test name and build (the parallax binary's path): the suites
// of two checkouts on one machine (a CI clone beside a working tree) never share one, and a
// rerun of the same build reuses its own.
inline std::string scratch_dir(const std::string& name) {
  const std::string build = std::to_string(std::hash<std::string>{}(parallax_bin()));
  const auto d = std::filesystem::temp_directory_path() / ("parallax_exec_" + name + "_" + build);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

inline int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// A plan of `model` (a preset name or a model file; gpt-tiny by default); flags are extra
// `parallax predict` flags (the global batch is 4 unless they say). The plan is the executor's own (stack parallax-executor): its
// capability table admits what the executor runs, GPipe included.
inline std::string make_plan(const std::string& dir, const std::string& name, int tp, int pp,
                             int dp, const std::string& flags, const std::string& model = "gpt-tiny",
                             int cp = 1) {
  const std::string path = dir + "/" + name + ".json";
  const std::string cmd = parallax_bin() +
                          " predict --model " + model + " --cluster dgx-a100-superpod --stack parallax-executor --dtype fp32"
                          " --mbs 1 --gpus " +
                          std::to_string(tp * cp * pp * dp) + " --tp " + std::to_string(tp) +
                          " --cp " + std::to_string(cp) +
                          " --pp " + std::to_string(pp) + " " + flags +
                          (flags.find("--recompute") == std::string::npos ? " --recompute none" : "") +
                          (flags.find("--global-batch") == std::string::npos ? " --global-batch 4" : "") +
                          " --out " + path +
                          " > /dev/null";
  if (shell(cmd) != 0) throw std::runtime_error("predict failed: " + cmd);
  return path;
}

// A plan of the mixture-of-experts model in file `model_json` (a model file's path): predicted for
// its dense twin (the same model without "moe", so the plan's micro-batching is the dense
// tests') and the MoE model and its expert parallelism `ep` put back; `parallax run` validates
// it with the MoE rules.
inline std::string make_moe_plan(const std::string& dir, const std::string& name, int tp, int pp, int dp,
                                 const std::string& flags, const std::string& model_json, int cp = 1,
                                 int ep = 1) {
  std::ifstream in(model_json);
  if (!in) throw std::runtime_error("cannot read " + model_json);
  const nlohmann::json moe_model = nlohmann::json::parse(in);
  nlohmann::json dense = moe_model;
  dense.erase("moe");
  const std::string dense_path = dir + "/" + name + ".dense_model.json";
  std::ofstream(dense_path) << dense.dump(1);
  // validate_plan's rule for a mixture of experts (Megatron-Core's MoE layer): tp > 1 runs SP.
  const bool sp = tp > 1 && flags.find("--sp") == std::string::npos;
  const std::string path = make_plan(dir, name, tp, pp, dp, sp ? flags + " --sp" : flags, dense_path, cp);
  nlohmann::json plan;
  {
    std::ifstream p(path);
    plan = nlohmann::json::parse(p);
  }
  plan["model"] = moe_model;
  plan["plan"]["ep"] = ep;  // expert parallelism: only an MoE model has it
  std::ofstream(path) << plan.dump(1);
  return path;
}

// The mpirun command line of `parallax run --quiet ARGS` on np ranks, output to log.
// odls_base_sigkill_timeout 0: when a rank exits non-zero (every refusal these tests check), Open
// MPI 4.1's mpirun otherwise waits 1 s before each of its SIGTERM and SIGKILL to the job's other
// processes, 2.0 s of an mpirun that takes 0.3 s (measured with a one-rank MPI program that
// returns 2: 2.35 s, 0.34 s with the timeout 0), and dozens of the suite's runs are refusals.
inline std::string mpirun_command(int np, const std::string& args, const std::string& log,
                                  const std::string& mpirun_flags = "") {
  return mpiexec() + " --allow-run-as-root --oversubscribe --mca btl self,vader " +
         "--mca odls_base_sigkill_timeout 0 " + mpirun_flags + " -np " + std::to_string(np) + " " + parallax_bin() + " run --quiet " + args +
         " > " + log + " 2>&1";
}

inline int mpirun(int np, const std::string& args, const std::string& log) {
  return shell(mpirun_command(np, args, log));
}

inline std::vector<double> losses(const std::string& measurements) {
  std::ifstream in(measurements);
  const auto j = nlohmann::json::parse(in);
  std::vector<double> out;
  for (const auto& it : j.at("iterations")) out.push_back(it.at("loss").get<double>());
  return out;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace parallax::test
