#pragma once
// Efficiency profile: everything the cost model treats as efficiency rather than as hardware spec.
// Presets carry default profiles (presets/profiles/*.json); calibration replaces them.
#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/json_reader.hpp"
#include "parallax/topologies/collectives.hpp"

namespace parallax {

struct SoftwareStack {
  // Multiplies the achieved FLOP/s and bytes/s of every compute op (kernel quality, launch gaps,
  // framework overheads). 1.0 for the stack the GEMM table was fitted on.
  double compute_efficiency_scale = 1.0;
};

// Where a profile's numbers come from (docs/design.md §9): the machine and backend they were measured
// on, when, by which tool, with how many compute threads per rank, and from which runs.
struct Provenance {
  std::string machine;
  std::string backend;  // "cost model" (fitted to published runs), "cpu", "cuda", "nccl-tests", ...
  std::string date;
  std::string tool;
  int64_t threads_per_rank = 0;  // CPU backend: the device a rank is (0 = not applicable)
  std::vector<std::string> source_runs;
};

// A measured GEMM shape: the fraction of the dtype's peak it reached. `role` is the GEMM's place in
// a linear layer (forward, dgrad, wgrad): the same M, N, K runs with different operand layouts.
struct GemmShapeEfficiency {
  std::string role;
  double batch = 1, m = 0, n = 0, k = 0;
  double efficiency = 0;       // operands from memory (caches flushed before the call)
  double warm_efficiency = 0;  // operands in the last-level cache (0: not measured)
};

// A model's layer dimensions, which key per-layer op-class efficiencies, and optionally the
// tensor-parallel degree: tp 0 is the microbenchmarks' average over every tp they ran; a refit
// from executed runs keys its correction by the run's tp (tp changes every op's shape, so a tp 2
// run says little about tp 1 shards: on this machine a refit from a tp 2 gpt-tiny run moved the
// tp 1 plans' predictions 3% the wrong way).
struct LayerKey {
  int64_t seq_len = 0, hidden = 0, heads = 0, ffn_hidden = 0, vocab = 0;
  int64_t tp = 0;
  auto operator<=>(const LayerKey&) const = default;
};

// One op class measured on one model's layers (CPU calibration), over every tp and micro-batch the
// microbenchmarks ran: the kernels' efficiency depends on the layer's sizes (the attention loops
// ran 1.7x closer to the roofline at gpt-tiny's 64 tokens and 32-wide heads than at gpt-25m's),
// so a model the microbenchmarks ran gets its own numbers and the class's aggregate serves the
// others. Per model rather than per (tp, micro-batch) shard: single shards varied by +-30% from
// one calibration to the next on the 2-core VM, the average over a model's shards did not.
struct ClassLayerEfficiency {
  std::string op_class;
  LayerKey layer;
  double efficiency = 0;       // fraction of the class's roofline time, caches flushed
  double warm_efficiency = 0;  // data in the last-level cache (0: not measured)
};

// α–β fit of one collective on a group of `ranks` ranks on one node (intra_node) or spanning nodes
// (inter_node): time = alpha_s + busbw_factor(collective, ranks) * bytes / busbw (nccl-tests
// conventions; send_recv has factor 1). With a layout (nccl-tests import) it describes groups of
// exactly that layout; without one, see collective_fit. Groups of another size (within a node)
// scale alpha by the ring's steps.
struct CollectiveFit {
  Collective collective = Collective::all_reduce;
  bool inter_node = false;
  int64_t ranks = 2;
  double alpha_s = 0;
  double busbw_bytes_per_s = 0;
  std::string source;  // e.g. "mpi microbenchmark, 24 sizes", "nccl-tests all_reduce_perf"
  // The layout it was measured on (nodes x ranks on the fullest node); 0 = not recorded.
  int64_t nodes = 0;
  int64_t ranks_per_node = 0;
};

// A group's size and how it sits on nodes (topologies' GroupCost: size, nodes, per_node).
struct GroupLayout {
  int64_t ranks = 2;
  int64_t nodes = 1;
  int64_t per_node = 2;  // most members on one node
};

const char* collective_json_name(Collective c);
// The collectives a profile fits, read from a JSON reader's "collective" key.
Collective read_fitted_collective(JsonObjectReader& r);

struct EfficiencyProfile {
  std::string name;
  std::string source;  // how the numbers were obtained (fit set, microbenchmarks, ...)
  // Fraction of the dtype's dense peak a GEMM reaches, keyed by its smallest dimension
  // min(M, N, K); interpolated linearly in log2(dim), clamped at the ends. Sorted by dim.
  std::vector<std::pair<double, double>> gemm_efficiency_by_min_dim;
  // The curve the table was drawn from when a fit made it (parallax fit): e_max * d / (d + d_half).
  // Documentation and the fit's starting shape; the cost model reads the table. 0 = none.
  double gemm_curve_e_max = 0;
  double gemm_curve_d_half = 0;
  // Fraction of HBM bandwidth reached by memory-bound (element-wise, norm, softmax) kernels.
  double memory_bound_efficiency = 0.8;
  // Fused attention (FlashAttention): the fraction of the 16-bit dense peak its forward and
  // backward kernels reach on this GPU, as published for the kernel the stacks run; 0 = not given
  // (the GEMM curve at the head size applies). A calibrated flash_attention class overrides it.
  double fused_attention_forward = 0;
  double fused_attention_backward = 0;
  std::string fused_attention_source;
  // Fraction of each communication class hidden behind compute (0 = fully exposed).
  double tp_overlap = 0;
  double pp_overlap = 0;
  double dp_overlap = 0;
  // Bytes per GPU the framework cannot use (CUDA context, NCCL buffers, allocator fragmentation).
  double memory_reserve_bytes = 0;
  // The host's time to issue one MoE layer's forward and backward for one micro-batch (0 = not
  // costed). Megatron-Core's token dispatchers copy the tokens per expert to the host and wait for
  // them in every MoE layer's forward, so the host runs at most one layer ahead of the GPU: a
  // layer whose GPU work is shorter than this waits for the host (iteration_costs). Host work, not
  // GPU work: parallax fit fits it on the mixture-of-experts rows of every GPU (profile_fit.hpp).
  double moe_layer_host_s = 0;
  // The fitted profile whose efficiencies this one carries unchanged (e.g. b200-megatron carries
  // h100-megatron's: no GPU of its own has rows that could judge a fit out of sample); empty = its
  // own. parallax fit and cross-validation derive it from that profile's fit (carry_fit), never
  // fit it on its own rows.
  std::string carries_fit_of;
  std::map<std::string, SoftwareStack> frameworks;
  Provenance provenance;
  // Optional calibrated tables (empty in the fitted GPU presets): exact GEMM shapes, efficiency
  // per op class (the fraction of an op's roofline time, replacing the GEMM table and
  // memory_bound_efficiency for the ops of that class; classes in costmodel/ops.hpp; may exceed 1
  // when the kernels move less than the cost model counts or run from cache), and
  // collective fits replacing the topology's estimate for the groups they describe.
  std::vector<GemmShapeEfficiency> gemm_efficiency_by_shape;
  std::map<std::string, double> op_class_efficiency;
  std::vector<CollectiveFit> communication;
  // Cache residency (CPU calibration; empty for GPUs, whose working sets dwarf their L2): the
  // last-level cache one rank can hold when every core runs a rank, and per shape / class the
  // efficiency with the data in that cache. A plan whose per-rank working set W fits gets the
  // warm efficiencies; iteration_costs blends warm and cold times by min(1, cache / W).
  double cache_bytes_per_rank = 0;
  std::map<std::string, double> op_class_efficiency_warm;
  std::vector<ClassLayerEfficiency> op_class_efficiency_by_layer;

  double gemm_efficiency(double min_dim) const;
  // The measured efficiency of exactly this shape and role, or nullptr.
  const GemmShapeEfficiency* gemm_shape(const std::string& role, double batch, double m, double n,
                                        double k) const;
  // The measured efficiency of this class on these layer dimensions: the entry of the key's tp,
  // else (tp > 0) the entry for any tp (tp 0), else nullptr. `exact`: the key's entry only.
  const ClassLayerEfficiency* class_layer(const std::string& op_class, const LayerKey& layer,
                                          bool exact = false) const;
  // The fit that describes a group of this layout, or nullptr (see docs/calibration.md).
  const CollectiveFit* collective_fit(Collective c, const GroupLayout& g) const;
  // Throws InputError naming the framework and the known ones.
  const SoftwareStack& framework(const std::string& name) const;
  // The stack a job on this profile runs when it names none: megatron-lm where the profile has
  // it, else the profile's only stack; throws InputError when it has several and no megatron-lm.
  std::string default_stack() const;
};

// Time of a collective of `bytes` (nccl-tests size) on `ranks` ranks from a fit (see CollectiveFit).
double fitted_time_s(const CollectiveFit& f, int64_t ranks, double bytes);
// Ring steps of a collective on n ranks (the latency terms): 2(n-1), n-1, or 1 for send_recv.
double collective_steps(Collective c, int64_t n);

// `carrier` with every efficiency of `fitted` (the profile it carries_fit_of): its own name,
// source, provenance and carries_fit_of kept, everything else `fitted`'s.
EfficiencyProfile carry_fit(const EfficiencyProfile& carrier, const EfficiencyProfile& fitted);

EfficiencyProfile read_profile(JsonObjectReader& r);
nlohmann::json to_json(const EfficiencyProfile& p);
// Preset name (presets/profiles/NAME.json) or path to a profile JSON file.
EfficiencyProfile load_profile(const std::string& name_or_path);

}  // namespace parallax
