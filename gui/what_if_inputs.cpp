#include "what_if_inputs.hpp"

#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::gui {

PlannerInputs planner_inputs(const WhatIfInputs& w) {
  // Same order as `parallax plan`: the job (model first), then the search flags.
  const ResolvedJob rj = w.custom_shape
                             ? resolve_job(w.job, custom_model(w.shape, load_model(w.job.model)))
                             : resolve_job(w.job);
  return parallax::planner_inputs(rj, w.search);  // top_k and threads: the planner's defaults
}

nlohmann::json session_json(const WhatIfInputs& w) {
  const PlanOptions& o = w.job;
  const SearchFlags& s = w.search;
  return {{"parallax_gui_session", kSessionVersion},
          {"model", o.model},
          {"custom_shape", w.custom_shape},
          {"shape",
           {{"layers", w.shape.layers},
            {"hidden", w.shape.hidden},
            {"heads", w.shape.heads},
            {"ffn_hidden", w.shape.ffn_hidden},
            {"seq_len", w.shape.seq_len},
            {"vocab", w.shape.vocab}}},
          {"cluster", o.cluster},
          {"nodes", o.nodes},
          {"gpus", o.gpus},
          {"global_batch", o.job_value("global_batch")},
          {"tokens", o.job_value("tokens")},
          {"price", o.job_value("price_per_gpu_hour_usd")},
          {"profile", o.profile},
          {"dtype", o.job_value("dtype")},
          {"bytes_per_param", o.job_value("bytes_per_param")},
          {"framework", o.job_value("framework")},
          {"attention_kernel", o.job_value("attention_kernel")},
          {"recompute_allowed", s.recompute_allowed},
          {"sequence_parallel", !s.no_sp},
          {"allow_cross_node_tp", s.allow_cross_node_tp},
          {"allow_all", s.allow_all},
          {"uneven_pp", s.uneven_pp},
          {"force_tp", s.force_tp},
          {"force_pp", s.force_pp}};
}

WhatIfInputs read_session(const nlohmann::json& j, const std::string& source) {
  JsonObjectReader r(j, source);
  r.get_int("parallax_gui_session", kSessionVersion, kSessionVersion);
  WhatIfInputs w;
  PlanOptions& o = w.job;
  SearchFlags& s = w.search;
  o.model = r.get_string("model");
  w.custom_shape = r.get_bool("custom_shape");
  {
    JsonObjectReader sh = r.object("shape");
    w.shape.layers = sh.get_string("layers");
    w.shape.hidden = sh.get_string("hidden");
    w.shape.heads = sh.get_string("heads");
    w.shape.ffn_hidden = sh.get_string("ffn_hidden");
    w.shape.seq_len = sh.get_string("seq_len");
    w.shape.vocab = sh.get_string("vocab");
    sh.finish();
  }
  o.cluster = r.get_string("cluster");
  o.nodes = r.get_string_or("nodes", "");  // sessions saved before --nodes have none
  o.gpus = r.get_string("gpus");
  o.job_value("global_batch") = r.get_string("global_batch");
  o.job_value("tokens") = r.get_string("tokens");
  o.job_value("price_per_gpu_hour_usd") = r.get_string("price");
  o.profile = r.get_string("profile");
  o.job_value("dtype") = r.get_string("dtype");
  o.job_value("bytes_per_param") = r.get_string("bytes_per_param");
  o.job_value("framework") = r.get_string("framework");
  o.job_value("attention_kernel") = r.get_string_or("attention_kernel", "");  // sessions saved before it have none
  s.recompute_allowed = r.get_string("recompute_allowed");
  s.no_sp = !r.get_bool("sequence_parallel");
  s.allow_cross_node_tp = r.get_bool("allow_cross_node_tp");
  s.allow_all = r.get_bool("allow_all");
  s.uneven_pp = r.get_bool("uneven_pp");
  s.force_tp = r.get_string("force_tp");
  s.force_pp = r.get_string("force_pp");
  r.finish();
  return w;
}

}  // namespace parallax::gui
