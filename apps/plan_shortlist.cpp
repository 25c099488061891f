#include "plan_shortlist.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "parallax/core/error.hpp"
#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/plan_file.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/shortlist.hpp"
#include "parallax/export/export_text.hpp"
#include "parallax/export/launchers.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "text_table.hpp"

namespace parallax::cli {

double Shortlist::odds_total() const {
  double t = 0;
  for (const ShortlistEntry& e : entries) t += e.odds;
  return t;
}

Shortlist make_shortlist(const SearchResult& res, const TieRule& ties, size_t k) {
  Shortlist s;
  s.level = ties.level;
  s.sigma = plan_error_sigma(ties);
  std::vector<double> times;
  for (const RankedPlan& r : res.plans) times.push_back(r.time_s);
  s.odds = fastest_odds(times, s.sigma);
  for (size_t i : shortlist_indices(s.odds, k, ties.level)) s.entries.push_back({i, s.odds[i], "", {}, {}});
  return s;
}

namespace {

namespace fs = std::filesystem;

// The stack's own benchmark launch: file name and export format (export_text), by its exporter.
struct StackLaunch {
  const char* exporter;
  const char* file;
  const char* format;
};
constexpr StackLaunch kStackLaunches[] = {
    {"megatron", "megatron.sbatch", "slurm"},
    {"deepspeed", "megatron-deepspeed.sbatch", "megatron-deepspeed"},
    {"torchtitan", "torchtitan.sh", "torchtitan-launch"},
};

// `parallax run` on one host: mpirun from the plan's directory, measurements.json beside it.
std::string parallax_script(const PlanFile& f, size_t n, size_t rank, int64_t steps) {
  const bool gpu = compute_capability_major(f.cluster.gpu).has_value();
  return "#!/usr/bin/env bash\n"
         "# Shortlisted plan " + std::to_string(n) + " (#" + std::to_string(rank) + " of the search): " +
         std::to_string(steps) + " steps of `parallax run`, one rank per " + (gpu ? "GPU" : "core") + ".\n"
         "# Then: parallax plan <the same job> --measured " + std::to_string(n) + "/measurements.json\n"
         "# PARALLAX names the binary (default: parallax on PATH); MPIRUN the mpirun, PARALLAX_MPIRUN_FLAGS its flags;\n# arguments go to parallax run (e.g. --quiet).\n"
         "set -euo pipefail\n"
         "cd \"$(dirname \"$0\")\"\n" +
         (gpu ? "export CUDA_DEVICE_MAX_CONNECTIONS=8\n" : "") +
         "\"${MPIRUN:-mpirun}\" -np " + std::to_string(f.gpus) + " ${PARALLAX_MPIRUN_FLAGS:-} \"${PARALLAX:-parallax}\" run" +
         (gpu ? " --backend cuda" : "") + " --plan plan.json --steps " + std::to_string(steps) +
         " --out measurements.json \"$@\"\n";
}

void write_text(const fs::path& p, const std::string& text, bool executable) {
  std::ofstream out(p);
  out << text;
  if (!out.flush()) throw InputError(p.string(), "--shortlist-dir", "cannot be written");
  if (executable) fs::permissions(p, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
}

// One plan's directory: its plan file and every launch its trainers can run.
void write_entry(ShortlistEntry& e, const PlanFile& f, const fs::path& dir, size_t n, const ShortlistArgs& a) {
  fs::create_directory(dir);
  write_text(dir / "plan.json", to_json(f).dump(2) + "\n", false);
  LaunchOptions o;
  o.plan_path = "plan.json";
  o.job_name = "shortlist-" + std::to_string(n);
  o.benchmark_iters = a.iters;
  const auto add = [&](const std::string& file, const std::function<std::string()>& text) {
    try {
      write_text(dir / file, text(), true);
      e.files.push_back(file);
    } catch (const InputError& err) {
      e.left_out.emplace_back(file, err.rule());
    }
  };
  if (const std::string why = parallax_run_refusal(f); !why.empty()) e.left_out.emplace_back("parallax.sh", why);
  else if (plan_hosts(f) == 1) add("parallax.sh", [&] { return parallax_script(f, n, e.index + 1, a.iters); });
  else add("parallax.sbatch", [&] { return export_text(f, "slurm", o, "parallax"); });
  const std::string exporter = to_string(f.job.capabilities.exporter);
  for (const StackLaunch& l : kStackLaunches)
    if (exporter == l.exporter) add(l.file, [&] { return export_text(f, l.format, o); });
}

nlohmann::json entries_json(const Shortlist& s, const SearchResult& res) {
  nlohmann::json plans = nlohmann::json::array();
  for (const ShortlistEntry& e : s.entries) {
    const RankedPlan& r = res.plans[e.index];
    nlohmann::json left = nlohmann::json::object();
    for (const auto& [file, why] : e.left_out) left[file] = why;
    plans.push_back({{"rank", e.index + 1},
                     {"odds_fastest", e.odds},
                     {"ranking_time_s", r.time_s},
                     {"plan", to_json(r.plan)},
                     {"dir", e.dir},
                     {"files", e.files},
                     {"left_out", left}});
  }
  return plans;
}

}  // namespace

void write_shortlist(Shortlist& s, const SearchResult& res, const PlannerInputs& in, const ShortlistArgs& a) {
  const fs::path dir(a.dir);
  std::error_code ec;
  if (fs::exists(dir, ec) || fs::is_symlink(dir, ec))
    throw InputError(a.dir, "--shortlist-dir", "exists: name a new directory (a shortlist never overwrites one)");
  const fs::path tmp = dir.string() + ".tmp." + std::to_string(getpid());
  try {
    fs::create_directories(tmp);
    for (size_t n = 0; n < s.entries.size(); ++n) {
      ShortlistEntry& e = s.entries[n];
      e.dir = (dir / std::to_string(n + 1)).string();
      const PlanFile f{in.model, in.cluster, in.job, res.plans[e.index].plan, in.gpus};
      write_entry(e, f, tmp / std::to_string(n + 1), n + 1, a);
    }
    nlohmann::json manifest = shortlist_json(s, res);
    manifest["job"] = {{"model", to_json(in.model)}, {"cluster", to_json(in.cluster)},
                       {"job", to_json(in.job)}, {"gpus", in.gpus}};
    manifest["benchmark_iterations"] = a.iters;
    manifest["measure"] =
        "Run each plan's launch, then the same plan command with --measured and the runs' "
        "measurements.json files or Megatron-LM logs (a log is read with the plan.json of its "
        "directory): docs/predict.md.";
    write_text(tmp / "shortlist.json", manifest.dump(2) + "\n", false);
    fs::rename(tmp, dir);
  } catch (const fs::filesystem_error& err) {
    fs::remove_all(tmp, ec);
    throw InputError(a.dir, "--shortlist-dir", std::string("cannot be written: ") + err.code().message());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

std::string shortlist_text(const Shortlist& s, const SearchResult& res, const ShortlistArgs& a) {
  TextTable t({"shortlist", "#", "plan", "iter s", "odds fastest", "launches"});
  for (size_t n = 0; n < s.entries.size(); ++n) {
    const ShortlistEntry& e = s.entries[n];
    std::string files;
    for (const std::string& f : e.files) files += (files.empty() ? "" : " ") + f;
    t.add_row({std::to_string(n + 1), std::to_string(e.index + 1), plan_line(res.plans[e.index].plan),
               fmt(res.plans[e.index].time_s, 3), fmt_pct(e.odds), files.empty() ? "-" : files});
  }
  std::string s_text = "shortlist: the " + std::to_string(s.entries.size()) +
                       " plans most likely to be the fastest (the fewest whose odds reach " + fmt_pct(s.level) +
                       ", at most " + std::to_string(a.k) + "), with odds " +
                       fmt_pct(s.odds_total()) + " that one of them is the fastest (each plan's time off by the ratio error of the tie rule";
  s_text += std::isfinite(s.sigma) ? ", sigma " + fmt(s.sigma, 3) + " in log time)\n"
                                   : "; too few sweeps for one: even odds, the fastest predicted)\n";
  s_text += t.str();
  if (s.odds_total() < s.level - 1e-12)
    s_text += "the shortlist reaches only " + fmt_pct(s.odds_total()) + " of the odds: more plans than " +
              std::to_string(a.k) + " are about as fast; a larger --shortlist or a narrower search (--search, "
              "--force-tp, ...) would hold more of them\n";
  if (!s.entries.empty() && !s.entries.front().dir.empty())
    s_text += "wrote " + a.dir + "/: run each plan's launch (" + std::to_string(a.iters) +
              " iterations), then this command again with --measured and what they wrote\n";
  return s_text;
}

nlohmann::json shortlist_json(const Shortlist& s, const SearchResult& res) {
  return {{"level", s.level},
          {"sigma", std::isfinite(s.sigma) ? nlohmann::json(s.sigma) : nlohmann::json()},
          {"odds_fastest", s.odds_total()},
          {"plans", entries_json(s, res)}};
}

}  // namespace parallax::cli
