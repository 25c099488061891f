// parallax: plan, predict, simulate and run 3D-parallel GPT training (docs/design.md §10).
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Parallax: how to split a GPT over GPUs, how fast it trains, whether it fits"};
  app.set_version_flag("--version", std::string("parallax ") + parallax::kVersion +
                                        " (backends: " + parallax::kBackends + ")");
  app.require_subcommand(1);
  int exit_code = 0;  // set by the commands whose outcome is a code of their own
  parallax::cli::add_presets_command(app);
  parallax::cli::add_predict_command(app);
  parallax::cli::add_validate_command(app);
  parallax::cli::add_fit_command(app);
  parallax::cli::add_plan_command(app);
  parallax::cli::add_capacity_command(app);
  parallax::cli::add_export_command(app);
  parallax::cli::add_report_command(app);
  parallax::cli::add_simulate_command(app);
  parallax::cli::add_topo_command(app);
  parallax::cli::add_placement_command(app);
  parallax::cli::add_compare_command(app, exit_code);
#ifdef PARALLAX_HAVE_EXECUTOR
  parallax::cli::add_run_command(app, exit_code);
  parallax::cli::add_checkpoint_command(app);
  parallax::cli::add_launch_command(app, exit_code);
  parallax::cli::add_calibrate_command(app, exit_code);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "parallax: error: command line: %s (see --help)\n", e.what());
    return parallax::kExitBadInput;
  } catch (const parallax::InputError& e) {
    std::fprintf(stderr, "parallax: error: %s\n", e.what());
    return parallax::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parallax: internal error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
