// parallax predict: the analytic prediction of one hand-chosen plan.
#include <algorithm>
#include <iostream>
#include <memory>
#include <set>

#include "commands.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/intervals.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/inputs/flag_values.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/megatron_import.hpp"
#include "parallax/inputs/nemo_config.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "parallax/inputs/recipe.hpp"
#include "plan_options.hpp"
#include "prediction_text.hpp"
#include "text_table.hpp"
#include "text_input.hpp"

namespace parallax::cli {
namespace {

struct PredictArgs {
  PlanOptions plan;
  bool json = false;
  std::string out;
  std::string megatron_args;  // a Megatron-LM command line to evaluate, file or "-"
  std::string recipe;         // a YAML/JSON recipe: the flags' values in a file
  std::set<std::string> given;  // recipe keys of the flags typed on the command line
  std::string interval_level = "0.8";
};

// The plan of an existing Megatron-LM launch: its arguments give the model, batch, dtype and
// parallel layout; --cluster, --gpus (or --nodes), --stack and --profile what they do not say.
Resolved resolve_megatron(const PredictArgs& a) {
  const std::string text = a.megatron_args == "-" ? read_stream(std::cin) : read_text(a.megatron_args);
  const ResolvedJob j = resolve_job(a.plan);
  PlanFile base;
  base.cluster = j.cluster;
  base.gpus = j.gpus;
  base.job = j.job;
  base.plan.order = a.plan.value("order");
  const MegatronImport imp = import_megatron_command(text, base);
  // One note per list of arguments the prediction does not take, what they are said after it.
  auto note = [](const std::vector<std::string>& args, const char* what) {
    if (args.empty()) return;
    std::string list;
    for (const std::string& x : args) list += (list.empty() ? "" : ", ") + x;
    std::cerr << "parallax: note: " << args.size() << " Megatron-LM arguments " << what << ": " << list << "\n";
  };
  note(imp.ignored, "do not change the plan and were not read");
  note(imp.not_costed, "change the iteration time but are not costed; the prediction leaves them out");
  validate_plan(imp.file.model, imp.file.cluster, imp.file.job, imp.file.plan, imp.file.gpus,
                a.megatron_args == "-" ? "stdin" : a.megatron_args);
  return {imp.file, j.profile};
}

// The plan of a NeMo 1.x training config (nemo_config.hpp): its trainer and model give the GPUs
// (the cluster at trainer.num_nodes nodes), model, batch, dtype and parallel layout; --cluster,
// which the config does not name, is needed; --stack (default nemo-1), --profile, --order,
// --tokens (default: trainer.max_steps' tokens) and --price apply. Flags the config gives are
// refused rather than silently losing to it or overriding it.
Resolved resolve_nemo(const PredictArgs& a) {
  for (const char* key : {"model", "nodes", "gpus", "global_batch", "tp", "pp", "vpp", "mbs", "sp",
                          "recompute", "recompute_layers", "zero", "first_stage_layers",
                          "last_stage_layers", "schedule", "dtype"}) {
    if (a.given.count(key) == 0) continue;
    std::string flag = std::string("--") + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw InputError("command line", flag, "cannot be combined with a NeMo config, which gives it (" + a.recipe + ")");
  }
  if (a.given.count("cluster") == 0)
    throw InputError("command line", "--cluster",
                     "is needed with a NeMo config (" + a.recipe + "), which does not say which cluster it runs on");
  const NemoConfig n = read_nemo_config(a.recipe);
  PlanOptions o = a.plan;
  o.nodes = std::to_string(n.nodes);
  o.gpus.clear();  // all of the cluster's at that many nodes; trainer.devices of each, below
  if (a.given.count("stack") == 0) o.job_value("framework") = "nemo-1";
  try {
    const ResolvedJob j = resolve_job(o);
    if (n.devices > j.cluster.gpus_per_node)
      throw InputError(n.path, "$.trainer.devices",
                       "must be at most the GPUs of a node of cluster " + j.cluster.name + " (" +
                           std::to_string(j.cluster.gpus_per_node) + ") (got " + std::to_string(n.devices) + ")");
    PlanFile base;
    base.cluster = j.cluster;
    base.gpus = n.nodes * n.devices;
    base.job = j.job;
    base.plan.order = a.plan.value("order");
    PlanFile f = import_megatron_args(n.megatron_args, base).file;
    f.model.name = n.name;
    f.model.source = "NeMo config " + n.path;
    if (a.given.count("tokens") != 0) f.job.tokens = j.job.tokens;
    validate_plan(f.model, f.cluster, f.job, f.plan, f.gpus, n.path);
    return {f, j.profile};
  } catch (const InputError& e) {
    rethrow_as_nemo_error(e, n);
  }
}

void print_text(const PlanFile& f, const EfficiencyProfile& prof, const Prediction& pr, const PredictionInterval& iv) {
  std::cout << inputs_header(f.model, f.cluster, f.gpus, f.job, prof.name)
            << "plan     " << plan_line(f.plan) << "\n\n";

  std::cout << throughput_table(pr, &iv) << interval_note(iv) << '\n' << time_table(pr) << '\n'
            << memory_section(pr, f.plan);
}

void run_predict(const PredictArgs& a) {
  if (!a.recipe.empty() && !a.megatron_args.empty())
    throw InputError("command line", "--from-recipe", "cannot be combined with --from-megatron-args");
  const Resolved r = !a.megatron_args.empty() ? resolve_megatron(a)
                     : !a.recipe.empty() && is_nemo_config(a.recipe) ? resolve_nemo(a)
                     : !a.recipe.empty()      ? resolve_recipe(a.recipe, read_recipe(a.recipe, a.plan, a.given), a.given)
                                              : resolve(a.plan);
  const double level = parse_number("--interval-level", a.interval_level, 0.01, 0.99);
  const Prediction pr = predict(r.file.model, r.file.cluster, r.file.job, r.file.plan, r.profile);
  const PredictionInterval iv = prediction_interval(
      load_residuals(), job_features(r.file.model, r.file.cluster, r.file.job, r.file.plan), level);
  if (!a.out.empty()) write_file_atomic(a.out, to_json(r.file).dump(2) + "\n");
  if (a.json) {
    nlohmann::json j = to_json(pr);
    j["plan"] = to_json(r.file.plan);
    j["gpus"] = r.file.gpus;
    j["profile"] = r.profile.name;
    j["interval"] = interval_json(iv, pr);
    std::cout << j.dump(2) << '\n';
  } else {
    print_text(r.file, r.profile, pr, iv);
  }
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand("predict", "predict time, throughput and memory of one plan");
  add_plan_options(*sub, args->plan);
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_option("--interval-level", args->interval_level,
                  "the prediction interval's level, in (0, 1): the share of jobs like this one whose "
                  "measured time falls inside it (docs/predict.md)")
      ->capture_default_str();
  sub->add_option("--out", args->out, "write the plan file (model, cluster, job, plan)");
  sub->add_option("--from-recipe", args->recipe,
                  "a YAML or JSON file of the flags' values (model, cluster, gpus, stack, tp, pp, "
                  "...): its keys override the flags' defaults; or a NeMo 1.x training config "
                  "(trainer: and model:), evaluated on --cluster");
  sub->add_option("--from-megatron-args", args->megatron_args,
                  "a Megatron-LM command line (file, or - for stdin) to evaluate instead of the "
                  "model and parallel flags; --cluster, --gpus, --stack, --profile still apply");
  sub->callback([args, sub] {
    args->given = typed_recipe_keys(*sub);
    run_predict(*args);
  });
}

}  // namespace parallax::cli
