// parallax launch --plan plan.json [--hostfile F] [--dry-run] -- <run flags>: builds the Open MPI
// command that runs the plan (np = tp*pp*dp from the plan), prints it, and executes it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/plan_file.hpp"

namespace parallax::cli {

namespace {

struct LaunchOptions {
  std::string plan_path;
  std::string hostfile;
  std::string mpirun = "mpirun";
  bool dry_run = false;
  std::vector<std::string> run_args;
};

std::string quoted(const std::string& s) {
  if (s.find_first_of(" \t'\"$\\") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int launch(const LaunchOptions& o) {
  const nlohmann::json j = read_json_file(o.plan_path);
  const PlanFile pf = read_plan_file(j, o.plan_path);
  std::vector<std::string> argv = {o.mpirun, "-np", std::to_string(pf.plan.gpus())};
  if (!o.hostfile.empty()) argv.insert(argv.end(), {"--hostfile", o.hostfile});
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  char self[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  argv.push_back(n > 0 ? std::string(self, static_cast<size_t>(n)) : "parallax");
  argv.insert(argv.end(), {"run", "--plan", o.plan_path});
  argv.insert(argv.end(), o.run_args.begin(), o.run_args.end());
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + quoted(a);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (o.dry_run) return 0;
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  std::perror("parallax: launch: cannot execute mpirun");
  return 1;
}

}  // namespace

void add_launch_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LaunchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Build and run the mpirun command of a plan: parallax launch --plan plan.json -- <run flags>");
  cmd->add_option("--plan", o->plan_path, "plan file")->required();
  cmd->add_option("--hostfile", o->hostfile, "Open MPI hostfile");
  cmd->add_option("--mpirun", o->mpirun, "the mpirun to call");
  cmd->add_flag("--dry-run", o->dry_run, "print the command only");
  cmd->add_option("run_args", o->run_args, "flags passed to parallax run (after --)");
  cmd->callback([o, &exit_code] { exit_code = launch(*o); });
}

}  // namespace parallax::cli
