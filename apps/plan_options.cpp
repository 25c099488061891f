// The CLI11 side of the job / plan / search flags: which flag fills which field of PlanOptions and
// SearchFlags. Their resolution into validated specs lives in parallax::inputs, shared with the GUI
// so that both report bad input with the same message.
#include "plan_options.hpp"

#include <span>
#include <string>
#include <string_view>

#include "parallax/core/plan_fields.hpp"
#include "parallax/inputs/recipe.hpp"

namespace parallax::cli {

void add_job_options(CLI::App& app, PlanOptions& o, bool with_gpus) {
  for (const JobOption& j : job_options()) {  // inputs/job_flags.hpp
    if (!with_gpus && std::string_view(j.flag) == "--gpus") continue;
    const std::string name = j.alias != nullptr ? std::string(j.flag) + "," + j.alias : std::string(j.flag);
    CLI::Option* opt = app.add_option(name, j.text(o), j.help);
    if (j.show_default) opt->capture_default_str();
  }
}

void add_plan_options(CLI::App& app, PlanOptions& o) {
  add_job_options(app, o);
  // One option per plan field with a flag of its own (plan_fields.hpp), in the fields' order.
  const std::span<const PlanField> fields = plan_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const PlanField& f = fields[i];
    if (f.derived) continue;
    if (f.type == FieldType::on_off) {
      app.add_flag_callback(f.flag, [&o, i] { o.plan[i] = "true"; }, f.help);
      continue;
    }
    CLI::Option* opt = app.add_option(f.flag, o.plan[i], f.help);
    if (f.flag_default[0] != '\0') opt->capture_default_str();
  }
  // The defaults of --gpus, --tp, --pp and --global-batch are MT-NLG 530B's published plan, the
  // default model's; another --model takes the whole cluster, tp 1, pp 1 and one micro-batch per
  // data-parallel rank for the ones left out.
  CLI::App* sub = &app;
  app.parse_complete_callback([sub, &o] {
    if (sub->count("--model") == 0 || o.model == PlanOptions{}.model) return;
    if (sub->count("--gpus") == 0) o.gpus.clear();
    if (sub->count("--tp") == 0) o.value("tp") = "1";
    if (sub->count("--pp") == 0) o.value("pp") = "1";
    if (sub->count("--global-batch") == 0) o.job_value("global_batch").clear();
  });
}

std::set<std::string> typed_recipe_keys(const CLI::App& app) {
  std::set<std::string> keys;
  for (const CLI::Option* opt : app.get_options())
    if (opt->count() > 0) keys.insert(recipe_key(opt->get_name()));
  return keys;
}

}  // namespace parallax::cli
