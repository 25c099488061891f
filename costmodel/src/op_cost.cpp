// One op's time under a profile (op_cost.hpp), and the public op_time_s and op_roofline_s.
#include "op_cost.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "parallax/core/error.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/gemm_waves.hpp"
#include "parallax/costmodel/iteration_costs.hpp"

namespace parallax {
namespace op_cost {
namespace {

// The class's cold and warm efficiency on the model's layers: their own measurement when the
// profile has one, else the class's aggregate (warm 0 = not measured); nullopt for classes the
// profile does not calibrate.
std::optional<std::pair<double, double>> class_efficiency(const Op& op, const Rates& r) {
  const EfficiencyProfile& pf = *r.prof;
  if (pf.op_class_efficiency.empty()) return std::nullopt;  // (GPU profiles: no string built)
  const auto cls = pf.op_class_efficiency.find(op.op_class);
  if (cls == pf.op_class_efficiency.end()) return std::nullopt;
  if (const ClassLayerEfficiency* s = pf.class_layer(op.op_class, r.layer))
    return std::make_pair(s->efficiency, s->warm_efficiency);
  const auto w = pf.op_class_efficiency_warm.find(op.op_class);
  return std::make_pair(cls->second, w == pf.op_class_efficiency_warm.end() ? 0.0 : w->second);
}

const char* gemm_role(Phase ph) {
  switch (ph) {
    case Phase::backward_data: return "dgrad";
    case Phase::backward_weight: return "wgrad";
    default: return "forward";
  }
}

// A calibrated class efficiency is the fraction of the op's roofline time; a calibrated GEMM
// shape replaces the table by smallest dimension; otherwise the fitted tables apply.
bool is_attention(const Op& op) {
  const std::string_view c = op.op_class;
  return c.starts_with("attention") || c.starts_with("flash_attention");
}

double op_peak(const Op& op, const Rates& r) {
  return op.fp8 ? r.fp8_peak_flops_per_s : r.peak_flops_per_s;
}

double cold_op_time(const Op& op, const Rates& r) {
  const EfficiencyProfile& pf = *r.prof;
  const double peak = op_peak(op, r);
  if (const auto eff = class_efficiency(op, r))
    return op_roofline_s(op, peak, r.mem_bytes_per_s) / (eff->first * r.scale);
  const double mem_s = op.bytes / (r.mem_bytes_per_s * pf.memory_bound_efficiency * r.scale);
  if (op.kind == OpKind::memory) return mem_s;
  // Fused attention at the published efficiency of the kernel the stack runs, at the op's head
  // size (its contraction k) and sequence length (m); the profile's pair for a GPU no kernel
  // measurement covers (compute-bound: it moves Q, K, V, O).
  const GemmShape& g = op.shape;
  const bool flash = std::string_view(op.op_class).starts_with("flash_attention");
  const bool flash_bwd = flash && op.phase != Phase::forward && op.phase != Phase::recompute;
  double flash_eff = flash_bwd ? pf.fused_attention_backward : pf.fused_attention_forward;
  if (flash && r.attention_kernel)
    flash_eff = op.attention_kernel_efficiency >= 0
                    ? op.attention_kernel_efficiency
                    : op_attention_kernel_efficiency(op, *r.attention_kernel, *r.arch);
  if (flash && flash_eff > 0) return std::max(op.flops / (peak * flash_eff * r.scale), mem_s);
  if (const GemmShapeEfficiency* e = pf.gemm_shape(gemm_role(op.phase), g.batch, g.m, g.n, g.k))
    return op.flops / (peak * e->efficiency * r.scale);
  // The fitted curve is the efficiency of full waves; a partial last wave idles SMs.
  const double waves = op.wave_efficiency >= 0 ? op.wave_efficiency : r.gpu ? wave_efficiency(g, *r.gpu) : 1.0;
  const double eff = pf.gemm_efficiency(g.min_dim()) * waves;
  return std::max(op.flops / (peak * eff * r.scale), mem_s);
}

// The op's time with its data in the last-level cache, when the profile measured it (else < 0).
double warm_op_time(const Op& op, const Rates& r) {
  const EfficiencyProfile& pf = *r.prof;
  if (const auto eff = class_efficiency(op, r)) {
    if (eff->second <= 0) return -1;
    return op_roofline_s(op, op_peak(op, r), r.mem_bytes_per_s) / (eff->second * r.scale);
  }
  if (op.kind != OpKind::gemm) return -1;
  const GemmShape& g = op.shape;
  const GemmShapeEfficiency* e = pf.gemm_shape(gemm_role(op.phase), g.batch, g.m, g.n, g.k);
  if (!e || e->warm_efficiency <= 0) return -1;
  return op.flops / (op_peak(op, r) * e->warm_efficiency * r.scale);
}

}  // namespace

// Cold and warm times blended by the fraction of the plan's working set the cache holds.
double op_time(const Op& op, const Rates& r) {
  const double cold = cold_op_time(op, r);
  if (r.cache_fraction <= 0) return cold;
  const double warm = warm_op_time(op, r);
  return warm < 0 ? cold : r.cache_fraction * warm + (1 - r.cache_fraction) * cold;
}

PhaseTimes phase_times(const std::vector<Op>& ops, const Rates& r) {
  PhaseTimes t;
  for (const Op& op : ops) {
    const double s = op_time(op, r);
    switch (op.phase) {
      case Phase::forward: t.forward += s; break;
      case Phase::backward_data:
      case Phase::backward_weight: t.backward += s; break;
      case Phase::recompute: t.recompute += s; break;
    }
  }
  return t;
}

// The attention core's ops of an op list, per phase: what the context-parallel ring overlaps with.
PhaseTimes attention_times(const std::vector<Op>& ops, const Rates& r) {
  std::vector<Op> attention;
  for (const Op& op : ops)
    if (is_attention(op)) attention.push_back(op);
  return phase_times(attention, r);
}

// The linear layers' GEMMs of an op list (all phases): what TP communication overlaps with.
double linear_gemm_time(const std::vector<Op>& ops, const Rates& r) {
  double t = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm && !is_attention(op)) t += op_time(op, r);
  return t;
}

Rates rates_for(const GpuSpec& gpu, const JobSpec& j, const EfficiencyProfile& prof) {
  const double peak = gpu.peak(j.dtype);
  if (peak <= 0) {
    throw InputError("job", "$.job.dtype",
                     std::string("GPU ") + gpu.name + " has no " + to_string(j.dtype) + " math");
  }
  const bool fp8 = j.dtype == Dtype::fp8;
  Rates r{fp8 ? gpu.peak(Dtype::bf16) : peak, peak, gpu.hbm_bandwidth_bytes_per_s,
          prof.framework(j.framework).compute_efficiency_scale, &prof, 0, {}};
  r.gpu = &gpu;
  if (j.attention == Attention::fused) {
    r.attention_kernel = attention_kernel_for(j.attention_kernels, gpu.arch);
    r.arch = &gpu.arch;
  }
  return r;
}

// kOptimizerBytesPerParam (iteration_costs.hpp): fp32 master, m and v read and written (24),
// fp32 grad read (4), 16-bit weight written (2), gradient-norm read (4) and zeroing (4).
double optimizer_rate(const Rates& r, const EfficiencyProfile& prof) {
  const auto cls = prof.op_class_efficiency.find(kOptimizerClass);
  return r.mem_bytes_per_s * r.scale *
         (cls != prof.op_class_efficiency.end() ? cls->second : prof.memory_bound_efficiency);
}

}  // namespace op_cost

double op_roofline_s(const Op& op, double peak_flops_per_s, double bandwidth_bytes_per_s) {
  const double mem_s = op.bytes / bandwidth_bytes_per_s;
  return op.kind == OpKind::gemm ? std::max(mem_s, op.flops / peak_flops_per_s) : mem_s;
}

double op_time_s(const Op& op, const GpuSpec& gpu, const JobSpec& j, const EfficiencyProfile& prof,
                 double cache_fraction, const LayerKey& layer) {
  op_cost::Rates r = op_cost::rates_for(gpu, j, prof);
  r.cache_fraction = cache_fraction;
  r.layer = layer;
  return op_cost::op_time(op, r);
}

}  // namespace parallax
