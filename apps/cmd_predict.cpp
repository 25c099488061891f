// parallax predict: the analytic prediction of one hand-chosen plan.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/costmodel/prediction_json.hpp"
#include "parallax/inputs/job_flags.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "plan_options.hpp"
#include "prediction_text.hpp"
#include "text_table.hpp"

namespace parallax::cli {
namespace {

struct PredictArgs {
  PlanOptions plan;
  bool json = false;
  std::string out;
};

void print_text(const PlanFile& f, const EfficiencyProfile& prof, const Prediction& pr) {
  std::cout << inputs_header(f.model, f.cluster, f.gpus, f.job, prof.name)
            << "plan     " << plan_line(f.plan) << "\n\n";

  std::cout << throughput_table(pr) << '\n' << time_table(pr) << '\n'
            << memory_section(pr, f.plan);
}

void run_predict(const PredictArgs& a) {
  const Resolved r = resolve(a.plan);
  const Prediction pr = predict(r.file.model, r.file.cluster, r.file.job, r.file.plan, r.profile);
  if (!a.out.empty()) write_file_atomic(a.out, to_json(r.file).dump(2) + "\n");
  if (a.json) {
    nlohmann::json j = to_json(pr);
    j["plan"] = to_json(r.file.plan);
    j["gpus"] = r.file.gpus;
    j["profile"] = r.profile.name;
    std::cout << j.dump(2) << '\n';
  } else {
    print_text(r.file, r.profile, pr);
  }
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand("predict", "predict time, throughput and memory of one plan");
  add_plan_options(*sub, args->plan);
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_option("--out", args->out, "write the plan file (model, cluster, job, plan)");
  sub->callback([args] { run_predict(*args); });
}

}  // namespace parallax::cli
