// The CLI11 side of the search flags: which flag fills which field of SearchFlags.
#include "search_options.hpp"

namespace parallax::cli {

void add_search_flags(CLI::App& app, SearchFlags& f) {
  app.add_option("--recompute-allowed", f.recompute_allowed,
                 "recompute modes the search may use, comma-separated")
      ->capture_default_str();
  app.add_flag("--no-sp", f.no_sp, "do not consider sequence parallelism");
  app.add_flag("--allow-cross-node-tp", f.allow_cross_node_tp, "admit TP groups larger than a node");
  app.add_flag("--allow-all", f.allow_all, "admit plans no existing trainer runs");
  app.add_flag("--uneven-pp", f.uneven_pp,
               "also try lighter first/last pipeline stages (pp need not divide the layers)");
  app.add_option("--force-tp", f.force_tp, "search only plans with this tensor-parallel size");
  app.add_option("--force-pp", f.force_pp, "search only plans with this pipeline-parallel size");
  app.add_option("--force-cp", f.force_cp, "search only plans with this context-parallel size (1: none)");
}

}  // namespace parallax::cli
