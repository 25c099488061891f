#include "parallax/calibration/measurements.hpp"

#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"

namespace parallax::calib {

using nlohmann::json;

double Measurements::mean_iteration_s() const {
  const size_t first = iteration_s.size() > 1 ? 1 : 0;
  double t = 0;
  for (size_t i = first; i < iteration_s.size(); ++i) t += iteration_s[i];
  return t / static_cast<double>(iteration_s.size() - first);
}

std::string executor_op_class(const std::string& n) {
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  auto ends = [&](const char* p) {
    const std::string s(p);
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  const bool bwd = ends("_backward");
  if (starts("matmul_")) return "gemm";
  if (starts("attention")) return bwd ? "attention.bwd" : "attention";  // incl. _recompute
  if (starts("flash_attention")) return bwd ? "flash_attention.bwd" : "flash_attention";
  if (starts("rope")) return bwd ? "rope.bwd" : "rope";
  if (starts("ln_")) return bwd ? "norm.bwd" : "norm";
  if (starts("gelu") || starts("swiglu")) return bwd ? "activation.bwd" : "activation";
  if (n == "residual") return "residual";
  if (n == "bias_backward") return "residual.bwd";
  if (starts("embedding")) return bwd ? "embedding.bwd" : "embedding";
  if (n == "crossentropy") return "cross_entropy";
  if (n == "adamw") return "optimizer";
  return "";
}

Measurements measurements_from_json(const json& j, const std::string& source) {
  JsonObjectReader r(j, source);
  Measurements m;
  m.source = source;
  r.get_int("parallax_measurements_version", 1, 1);
  m.plan = read_plan_file(r.raw("plan"), source + " ($.plan)");
  m.backend = r.get_enum("backend", {"cpu", "cuda"});
  m.executed_dtype = r.get_enum("executed_dtype", {"fp32", "bf16", "fp16"});
  m.world_size = r.get_int("world_size", 1, 1 << 24);
  {
    JsonObjectReader mach = r.object("machine");
    m.threads_per_rank = mach.get_int_or("threads_per_rank", 0, 4096, 0);
  }
  const int64_t gpus = m.plan.plan.gpus();
  if (m.world_size != gpus)
    r.fail("world_size", "the run had " + std::to_string(m.world_size) +
                             " ranks but its plan needs tp*pp*dp = " + std::to_string(gpus) +
                             ": the plan does not match the run");
  const json& its = r.array("iterations");
  if (its.empty()) r.fail("iterations", "no iterations were measured");
  for (size_t i = 0; i < its.size(); ++i) {
    JsonObjectReader it(its[i], source, "$.iterations[" + std::to_string(i) + "]");
    const json& t = it.raw("time_s");
    if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() <= 0)
      it.fail("time_s", "must be a positive number of seconds (got " + t.dump() + ")");
    m.iteration_s.push_back(t.get<double>());
  }
  const json& ranks = r.array("ranks");
  if (static_cast<int64_t>(ranks.size()) != m.world_size)
    r.fail("ranks", "lists " + std::to_string(ranks.size()) + " ranks, world_size is " +
                        std::to_string(m.world_size));
  const PlanSpec& p = m.plan.plan;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string path = "$.ranks[" + std::to_string(i) + "]";
    JsonObjectReader rr(ranks[i], source, path);
    MeasuredRank mr;
    mr.rank = rr.get_int("rank", 0, m.world_size - 1);
    mr.tp_rank = rr.get_int("tp_rank", 0, p.tp - 1);
    mr.pp_rank = rr.get_int("pp_rank", 0, p.pp - 1);
    mr.dp_rank = rr.get_int("dp_rank", 0, p.dp - 1);
    mr.cp_rank = rr.get_int_or("cp_rank", 0, p.cp - 1, 0);  // absent before context parallelism
    const json& ops = rr.array("ops");
    for (size_t k = 0; k < ops.size(); ++k) {
      JsonObjectReader o(ops[k], source, path + ".ops[" + std::to_string(k) + "]");
      MeasuredOp op;
      op.name = o.get_string("name");
      op.op_class = executor_op_class(op.name);
      op.calls = o.get_int("calls", 0, int64_t{1} << 50);
      op.total_s = o.get_number("total_s", 0, 1e9);
      op.shape = o.get_string_or("shape", "");
      mr.ops.push_back(op);
    }
    const json& colls = rr.array("collectives");
    for (size_t k = 0; k < colls.size(); ++k) {
      JsonObjectReader o(colls[k], source, path + ".collectives[" + std::to_string(k) + "]");
      MeasuredCollective c;
      c.name = o.get_string("name");
      c.group = o.get_string("group");
      c.calls = o.get_int("calls", 0, int64_t{1} << 50);
      c.total_s = o.get_number("total_s", 0, 1e9);
      c.bytes = o.get_number("bytes", 0, 1e18);
      mr.collectives.push_back(c);
    }
    m.ranks.push_back(std::move(mr));
  }
  return m;
}

Measurements read_measurements(const std::string& path) {
  const json j = read_json_file(path);
  return measurements_from_json(j, path);
}

}  // namespace parallax::calib
