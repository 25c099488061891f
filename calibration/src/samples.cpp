#include "parallax/calibration/samples.hpp"

#include "parallax/core/dense_only.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::calib {

using nlohmann::json;

json to_json(const RawCalibration& r) {
  json compute = json::array();
  for (const ComputeSample& c : r.compute) {
    json gemms = json::array();
    for (const GemmSample& g : c.gemms) {
      json e = {{"backward", g.backward}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"seconds", g.seconds}};
      if (g.dgrad_seconds > 0) e["dgrad_seconds"] = g.dgrad_seconds, e["wgrad_seconds"] = g.wgrad_seconds;
      if (g.warm_seconds > 0) e["warm_seconds"] = g.warm_seconds;
      gemms.push_back(e);
    }
    compute.push_back({{"model", to_json(c.model)}, {"tp", c.tp}, {"micro_batch", c.micro_batch},
                       {"class_s", c.class_s}, {"class_warm_s", c.class_warm_s}, {"gemms", gemms}});
  }
  json opt = json::array();
  for (const OptimizerSample& o : r.optimizer) opt.push_back({{"params", o.params}, {"seconds", o.seconds}});
  json comm = json::array();
  for (const CommSample& c : r.comm)
    comm.push_back({{"collective", to_string(c.collective)}, {"ranks", c.ranks}, {"bytes", c.bytes},
                    {"seconds", c.seconds}});
  return {{"backend", r.backend}, {"machine", r.machine}, {"date", r.date}, {"ranks", r.ranks},
          {"threads_per_rank", r.threads_per_rank}, {"gemm_path", r.gemm_path},
          {"compute", compute}, {"optimizer", opt}, {"comm", comm}};
}

RawCalibration raw_from_json(const json& j, const std::string& source) {
  JsonObjectReader r(j, source);
  RawCalibration out;
  out.backend = r.get_string("backend");
  if (out.backend != "cpu" && out.backend != "cuda") r.fail("backend", "must be cpu or cuda");
  out.machine = r.raw("machine");
  out.date = r.get_string("date");
  out.ranks = r.get_int("ranks", 1, 1 << 20);
  out.threads_per_rank = r.get_int("threads_per_rank", 1, 4096);
  out.gemm_path = r.get_string("gemm_path");
  const json& compute = r.array("compute");
  for (size_t i = 0; i < compute.size(); ++i) {
    const std::string path = "$.compute[" + std::to_string(i) + "]";
    JsonObjectReader c(compute[i], source, path);
    ComputeSample s;
    JsonObjectReader m = c.object("model");
    s.model = read_model(m);
    refuse_moe(s.model, source, path + ".model.moe.num_experts");  // the fit costs it as dense
    s.tp = c.get_int("tp", 1, 1 << 20);
    s.micro_batch = c.get_int("micro_batch", 1, 1 << 20);
    JsonObjectReader cls = c.object("class_s");
    for (const auto& [k, v] : c.raw("class_s").items()) {
      (void)v;
      s.class_s[k] = cls.get_number(k, 0, 1e6);
    }
    cls.finish();
    if (c.has("class_warm_s")) {
      JsonObjectReader warm = c.object("class_warm_s");
      for (const auto& [k, v] : c.raw("class_warm_s").items()) {
        (void)v;
        s.class_warm_s[k] = warm.get_number(k, 0, 1e6);
      }
      warm.finish();
    }
    const json& gemms = c.array("gemms");
    for (size_t g = 0; g < gemms.size(); ++g) {
      JsonObjectReader e(gemms[g], source, path + ".gemms[" + std::to_string(g) + "]");
      GemmSample x;
      x.backward = e.get_bool("backward");
      x.m = e.get_number("m", 1, 1e9);
      x.n = e.get_number("n", 1, 1e9);
      x.k = e.get_number("k", 1, 1e9);
      x.seconds = e.get_number("seconds", 1e-12, 1e6);
      if (e.has("warm_seconds")) x.warm_seconds = e.get_number("warm_seconds", 1e-12, 1e6);
      if (x.backward && e.has("dgrad_seconds")) {
        x.dgrad_seconds = e.get_number("dgrad_seconds", 1e-12, 1e6);
        x.wgrad_seconds = e.get_number("wgrad_seconds", 1e-12, 1e6);
      }
      e.finish();
      s.gemms.push_back(x);
    }
    c.finish();
    out.compute.push_back(std::move(s));
  }
  const json& opt = r.array("optimizer");
  for (size_t i = 0; i < opt.size(); ++i) {
    JsonObjectReader e(opt[i], source, "$.optimizer[" + std::to_string(i) + "]");
    out.optimizer.push_back({e.get_number("params", 1, 1e15), e.get_number("seconds", 1e-12, 1e6)});
    e.finish();
  }
  const json& comm = r.array("comm");
  for (size_t i = 0; i < comm.size(); ++i) {
    JsonObjectReader e(comm[i], source, "$.comm[" + std::to_string(i) + "]");
    CommSample c;
    c.collective = read_fitted_collective(e);
    c.ranks = e.get_int("ranks", 2, 1 << 20);
    c.bytes = e.get_number("bytes", 1, 1e15);
    c.seconds = e.get_number("seconds", 1e-12, 1e6);
    e.finish();
    out.comm.push_back(c);
  }
  r.finish();
  return out;
}

}  // namespace parallax::calib
