#include "parallax/inputs/search_file.hpp"

#include "flag_file.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {

using flag_file::bool_of;
using flag_file::int_of;
using flag_file::values_of;

SearchFile read_search_file(const std::string& path, const PlanOptions& base, const SearchFlags& flags,
                            const std::set<std::string>& given) {
  static const std::set<std::string> job_keys = {
      "model", "cluster", "nodes", "gpus", "global_batch", "seq_len", "stack", "dtype", "bytes_per_param",
      "attention_kernel", "attention", "tokens", "price", "profile", "order"};
  SearchFile f;
  f.job = base;
  f.flags = flags;
  // A value, a list, or a range {min: A, max: B} (every integer from A to B; the planner keeps
  // those that divide what they must).
  auto ints = [&](const std::string& key, const YAML::Node& v, int64_t max) {
    if (!v.IsMap())
      return values_of<int64_t>(path, key, v, [&](const std::string& t, const std::string& at) {
        return int_of(path, t, at, 1, max);
      });
    int64_t lo = 0, hi = 0;
    for (const auto& kv : v) {
      const std::string k = kv.first.Scalar(), at = "$." + key + "." + k;
      if (k != "min" && k != "max") throw InputError(path, at, "unknown key: a range has min and max");
      if (!kv.second.IsScalar()) throw InputError(path, at, "must be an integer");
      (k == "min" ? lo : hi) = int_of(path, kv.second.Scalar(), at, 1, max);
    }
    if (lo == 0 || hi == 0) throw InputError(path, "$." + key, "a range needs both min and max");
    if (lo > hi)
      throw InputError(path, "$." + key, "min (" + std::to_string(lo) + ") must be <= max (" +
                                             std::to_string(hi) + ")");
    constexpr int64_t kMaxRange = 65536;
    if (hi - lo >= kMaxRange)
      throw InputError(path, "$." + key, "a range spans at most " + std::to_string(kMaxRange) + " values");
    std::vector<int64_t> out;
    for (int64_t x = lo; x <= hi; ++x) out.push_back(x);
    return out;
  };
  auto one_bool = [&](const std::string& key, const YAML::Node& v) {
    if (!v.IsScalar()) throw InputError(path, "$." + key, "must be true or false");
    return bool_of(path, v.Scalar(), "$." + key);
  };
  const auto other = [&](const std::string& key, const YAML::Node& v) {
    if (key == "tp") f.tp = ints(key, v, Limits::max_gpus);
    else if (key == "pp") f.pp = ints(key, v, Limits::max_gpus);
    else if (key == "mbs") f.mbs = ints(key, v, Limits::max_global_batch);
    else if (key == "vpp") f.vpp = ints(key, v, Limits::max_layers);
    else if (key == "zero")
      f.zero = values_of<int64_t>(path, key, v, [&](const std::string& t, const std::string& at) {
        return int_of(path, t, at, 0, 3);
      });
    else if (key == "recompute")
      f.recompute = values_of<Recompute>(path, key, v, [&](const std::string& t, const std::string& at) {
        if (t == "none") return Recompute::none;
        if (t == "selective") return Recompute::selective;
        if (t == "full") return Recompute::full;
        throw InputError(path, at, "must be none, selective or full (got \"" + t + "\")");
      });
    else if (key == "sp")
      f.sp = values_of<bool>(path, key, v, [&](const std::string& t, const std::string& at) {
        return bool_of(path, t, at);
      });
    else if (key == "cp") f.cp = ints(key, v, Limits::max_gpus);
    else if (key == "ep") f.ep = ints(key, v, Limits::max_gpus);
    else if (key == "allow_cross_node_tp") f.flags.allow_cross_node_tp = one_bool(key, v);
    else if (key == "allow_all") f.flags.allow_all = one_bool(key, v);
    else if (key == "uneven_pp") f.flags.uneven_pp = one_bool(key, v);
    else if (key == "max_micro_batch") {
      if (!v.IsScalar()) throw InputError(path, "$." + key, "must be an integer");
      f.max_micro_batch = int_of(path, v.Scalar(), "$." + key, 1, Limits::max_global_batch);
    } else return false;
    return true;
  };
  flag_file::apply_job_keys(path, flag_file::load_mapping(path), f.job, given, &job_keys, other);
  return f;
}

PlannerInputs search_file_inputs(const std::string& path, const SearchFile& f,
                                 const std::set<std::string>& given) {
  PlannerInputs in;
  try {
    in = planner_inputs(resolve_job(f.job), f.flags);
  } catch (const InputError& e) {
    flag_file::rethrow_as_file_error(e, path, given);
  }
  SearchOptions& o = in.options;
  o.tp_values = f.tp;
  o.pp_values = f.pp;
  o.mbs_values = f.mbs;
  o.vpp_values = f.vpp;
  o.cp_values = f.cp;
  o.ep_values = f.ep;
  o.sp_values = f.sp;
  if (!f.zero.empty()) o.zero = f.zero;
  if (!f.recompute.empty()) o.recompute = f.recompute;
  if (f.max_micro_batch > 0) o.max_micro_batch = f.max_micro_batch;
  return in;
}

}  // namespace parallax
