#pragma once
// One op's time on one GPU under a profile, and the sums of an op list per phase: what
// iteration_costs.cpp prices a stage's ops with (private to costmodel).
#include <string>
#include <vector>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/costmodel/attention_efficiency.hpp"
#include "parallax/costmodel/ops.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::op_cost {

struct Rates {
  // The job's dtype's peak, except in an fp8 job: there only the linear layers' GEMMs (Op::fp8)
  // run at the fp8 peak; attention and the output layer keep 16 bits (Transformer Engine's
  // fp8_autocast around the layers, torchao's Float8Linear with the output layer filtered out).
  double peak_flops_per_s;
  double fp8_peak_flops_per_s;
  double mem_bytes_per_s;
  double scale;
  const EfficiencyProfile* prof;
  double cache_fraction = 0;  // cache_resident_fraction() of the plan
  LayerKey layer;             // the model's layer dimensions (per-layer class efficiencies)
  // The fused attention kernel the stack runs on this GPU (presets/attention/), or nullptr.
  const AttentionKernel* attention_kernel = nullptr;
  const std::string* arch = nullptr;  // the GPU's compute capability
  const GpuSpec* gpu = nullptr;        // its SMs and GEMM tile (wave quantization)
};

struct PhaseTimes {
  double forward = 0;
  double backward = 0;
  double recompute = 0;
};

// Throws InputError when the GPU lacks the job's dtype.
Rates rates_for(const GpuSpec& gpu, const JobSpec& j, const EfficiencyProfile& prof);
// The optimizer step's bytes per second.
double optimizer_rate(const Rates& r, const EfficiencyProfile& prof);
// One op's time: cold and warm times blended by the fraction of the working set the cache holds.
double op_time(const Op& op, const Rates& r);
PhaseTimes phase_times(const std::vector<Op>& ops, const Rates& r);
// The attention core's ops of an op list, per phase: what the context-parallel ring overlaps with.
PhaseTimes attention_times(const std::vector<Op>& ops, const Rates& r);
// The linear layers' GEMMs of an op list (all phases): what TP communication overlaps with.
double linear_gemm_time(const std::vector<Op>& ops, const Rates& r);

}  // namespace parallax::op_cost
