// The launcher side of the microbenchmark sweep (sweep.hpp): a request file, mpirun, the results.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "parallax/calibration/machine.hpp"
#include "parallax/calibration/sweep.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"

namespace parallax::calib {

namespace {

// Removes a file when it goes out of scope (the request and results, whatever happens).
struct TempFile {
  std::string path;
  ~TempFile() { std::remove(path.c_str()); }
};

std::string temp_path(const std::string& what) {
  return (std::filesystem::temp_directory_path() /
          ("parallax-calibrate-" + std::to_string(getpid()) + "-" + what + ".json"))
      .string();
}

// fork + exec + wait; the child's exit status, or -1 when it did not exit normally.
int run_and_wait(std::vector<std::string> argv) {
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
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::vector<int64_t> sweep_tps(const SweepOptions& o, const std::vector<ModelSpec>& models) {
  if (!o.tps.empty()) return o.tps;
  std::vector<int64_t> out;
  const bool cuda = o.backend == "cuda";
  const int64_t top = cuda ? 8 : std::max(1, o.np);
  for (int64_t t = 1; t <= top; t = cuda ? 2 * t : t + 1) {
    bool ok = true;
    for (const ModelSpec& m : models) ok = ok && m.heads % t == 0 && m.ffn_hidden % t == 0;
    if (ok) out.push_back(t);
  }
  return out;
}

RawCalibration run_sweep(const SweepOptions& o, const std::vector<std::string>& worker_command,
                         const std::string& raw_out) {
  const TempFile request{temp_path("request")}, results{temp_path("results")};
  const nlohmann::json req = {{"backend", o.backend}, {"models", o.models},   {"tps", o.tps},
                              {"mbs", o.mbs},         {"repeats", o.repeats}, {"warmup", o.warmup},
                              {"results", results.path}};
  write_file_atomic(request.path, req.dump(1) + "\n");
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(o.np)};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (o.np > machine_cores()) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), worker_command.begin(), worker_command.end());
  argv.push_back(request.path);
  const int status = run_and_wait(argv);
  if (status != 0)
    throw InputError("calibrate", "mpirun", "the microbenchmark ranks failed (exit status " +
                                                std::to_string(status) + "); see the messages above");
  const nlohmann::json j = read_json_file(results.path);
  if (!raw_out.empty()) write_file_atomic(raw_out, j.dump(1) + "\n");
  return raw_from_json(j, results.path);
}

}  // namespace parallax::calib
