#include "parallax/costmodel/prediction_json.hpp"

#include <cmath>

#include "parallax/costmodel/stage_time.hpp"
#include "parallax/costmodel/time_breakdown.hpp"

namespace parallax {

nlohmann::json to_json(const Prediction& p) {
  nlohmann::json j;
  j["iteration_time_s"] = p.iteration_time_s;
  j["tokens_per_s"] = p.tokens_per_s;
  j["model_flops_per_iteration"] = p.model_flops;
  j["hardware_flops_per_iteration"] = p.hardware_flops;
  j["megatron_flops_per_iteration"] = p.megatron_flops;
  j["model_tflops_per_gpu"] = p.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = p.hardware_tflops_per_gpu;
  j["megatron_tflops_per_gpu"] = p.megatron_tflops_per_gpu;
  j["mfu"] = p.mfu;
  j["fits"] = p.fits;
  j["bytes_per_param"] = p.bytes_per_param;
  j["zero_run"] = p.zero_run;
  if (p.ep_all_to_all_bytes > 0)
    j["ep_all_to_all"] = {{"bytes", p.ep_all_to_all_bytes}, {"time_s", p.ep_all_to_all_s}};
  j["time"] = nlohmann::json::object();
  for (const TimePartInfo& part : kTimeParts) j["time"][part.json_key] = p.time.*part.seconds;
  nlohmann::json stages = nlohmann::json::array();
  for (size_t i = 0; i < p.memory.size(); ++i) {
    const StageMemory& s = p.memory[i];
    const StageTime& t = p.stage_times[i];
    stages.push_back({{"stage", s.stage},
                      {"params", s.params},
                      {"weights_bytes", s.weights_bytes},
                      {"grads_bytes", s.grads_bytes},
                      {"optimizer_bytes", s.optimizer_bytes},
                      {"activations_bytes", s.activations_bytes},
                      {"buffers_bytes", s.buffers_bytes},
                      {"total_bytes", s.total_bytes()},
                      {"expert_params", s.expert_params}});
    nlohmann::json& stage = stages.back();
    for (const StageTermInfo& term : kStageTerms) {
      if (term.json_backward_key != nullptr) {
        stage[term.json_key] = pass_s(t, term, Pass::forward);
        stage[term.json_backward_key] = pass_s(t, term, Pass::backward);
      } else if (term.json_key != nullptr) {
        stage[term.json_key] = term_s(t, term);
      }
    }
  }
  j["memory"] = {{"peak_bytes", p.peak_bytes},
                 {"peak_stage", p.peak_stage},
                 {"reserve_bytes", p.reserve_bytes},
                 {"capacity_bytes", p.capacity_bytes},
                 {"per_stage", stages}};
  return j;
}

namespace {

nlohmann::json bound(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }

}  // namespace

nlohmann::json interval_json(const PredictionInterval& iv, const Prediction& p) {
  auto time = [&iv](double t) { return nlohmann::json::array({bound(t * iv.low_ratio), bound(t * iv.high_ratio)}); };
  auto rate = [&iv](double r) { return nlohmann::json::array({bound(r / iv.high_ratio), bound(r / iv.low_ratio)}); };
  return {{"level", iv.level},
          {"iteration_time_s", time(p.iteration_time_s)},
          {"tokens_per_s", rate(p.tokens_per_s)},
          {"model_tflops_per_gpu", rate(p.model_tflops_per_gpu)},
          {"mfu", rate(p.mfu)},
          {"rows", iv.rows},
          {"sources", iv.sources},
          {"sources_needed", iv.needed},
          {"basis", iv.basis},
          {"dropped", iv.dropped}};
}

}  // namespace parallax
