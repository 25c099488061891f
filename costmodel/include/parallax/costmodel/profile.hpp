#pragma once
// Efficiency profile: everything the cost model treats as efficiency rather than as hardware spec.
// Presets carry default profiles (presets/profiles/*.json); calibration replaces them.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/json_reader.hpp"

namespace parallax {

struct SoftwareStack {
  // Multiplies the achieved FLOP/s and bytes/s of every compute op (kernel quality, launch gaps,
  // framework overheads). 1.0 for the stack the GEMM table was fitted on.
  double compute_efficiency_scale = 1.0;
};

struct EfficiencyProfile {
  std::string name;
  std::string source;  // how the numbers were obtained (fit set, microbenchmarks, ...)
  // Fraction of the dtype's dense peak a GEMM reaches, keyed by its smallest dimension
  // min(M, N, K); interpolated linearly in log2(dim), clamped at the ends. Sorted by dim.
  std::vector<std::pair<double, double>> gemm_efficiency_by_min_dim;
  // Fraction of HBM bandwidth reached by memory-bound (element-wise, norm, softmax) kernels.
  double memory_bound_efficiency = 0.8;
  // Fraction of each communication class hidden behind compute (0 = fully exposed).
  double tp_overlap = 0;
  double pp_overlap = 0;
  double dp_overlap = 0;
  // Bytes per GPU the framework cannot use (CUDA context, NCCL buffers, allocator fragmentation).
  double memory_reserve_bytes = 0;
  std::map<std::string, SoftwareStack> frameworks;

  double gemm_efficiency(double min_dim) const;
  // Throws InputError naming the framework and the known ones.
  const SoftwareStack& framework(const std::string& name) const;
};

EfficiencyProfile read_profile(JsonObjectReader& r);
nlohmann::json to_json(const EfficiencyProfile& p);
// Preset name (presets/profiles/NAME.json) or path to a profile JSON file.
EfficiencyProfile load_profile(const std::string& name_or_path);

}  // namespace parallax
