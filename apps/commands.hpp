#pragma once
// One function per subcommand registers it on the app; each lives in its own cmd_*.cpp. A command
// either returns (exit code 0) or throws (main maps the exception to the exit code); the ones whose
// outcome is a code of their own (a child's, or the agreed result of MPI ranks) set `exit_code`,
// which main returns after parsing. No command exits the process itself.
#include <CLI/CLI.hpp>

namespace parallax::cli {

void add_presets_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_capacity_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_topo_command(CLI::App& app);
void add_placement_command(CLI::App& app);
// parallax run (built with PARALLAX_MPI): runs a plan under mpirun.
void add_run_command(CLI::App& app, int& exit_code);
// parallax checkpoint inspect (built with PARALLAX_MPI): reads and verifies checkpoints.
void add_checkpoint_command(CLI::App& app);
// parallax launch: builds, prints and runs the mpirun command of a plan.
void add_launch_command(CLI::App& app, int& exit_code);
// parallax calibrate: fits a profile (microbenchmarks with the executor; refits everywhere).
void add_calibrate_command(CLI::App& app, int& exit_code);
// parallax compare: predicted vs measured for executed runs.
void add_compare_command(CLI::App& app, int& exit_code);

}  // namespace parallax::cli
