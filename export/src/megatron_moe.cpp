// Megatron-Core's MoE flags (megatron/training/arguments.py, _add_moe_args) as the export writes
// them; inputs/src/megatron_moe_flags.cpp reads them back.
#include "megatron_moe.hpp"

#include "launch_args.hpp"

namespace parallax::megatron_moe {

void add_flags(std::vector<std::string>& a, const ModelSpec& m, const PlanSpec& p) {
  using launch_args::add;
  using launch_args::number_text;
  if (!m.is_moe()) return;
  const MoeSpec& x = m.moe;
  add(a, "--num-experts", x.num_experts);
  add(a, "--moe-router-topk", x.top_k);
  add(a, "--moe-ffn-hidden-size", x.expert_ffn_hidden);
  add(a, "--expert-model-parallel-size", p.ep);
  add(a, "--expert-tensor-parallel-size", expert_tp(p));
  // The plan's dispatcher: alltoall, or the flex dispatcher with its backend.
  if (deduplicating(p.moe_dispatcher))
    a.insert(a.end(), {"--moe-grouped-gemm", "--moe-token-dispatcher-type", "flex",
                       "--moe-flex-dispatcher-backend", to_string(p.moe_dispatcher)});
  else
    a.insert(a.end(), {"--moe-grouped-gemm", "--moe-token-dispatcher-type", "alltoall"});
  a.insert(a.end(), {"--moe-router-score-function", x.router == Router::sigmoid ? "sigmoid" : "softmax"});
  if (x.aux_loss_coeff > 0)
    a.insert(a.end(), {"--moe-router-load-balancing-type", "aux_loss", "--moe-aux-loss-coeff",
                       number_text(x.aux_loss_coeff)});
  else
    a.insert(a.end(), {"--moe-router-load-balancing-type", "none"});
  if (x.shared_experts > 0)
    add(a, "--moe-shared-expert-intermediate-size", x.shared_experts * x.shared_expert_ffn_hidden);
  if (x.layer_freq != 1 || x.first_k_dense > 0) {
    // The list form Megatron-LM evaluates (moe_freq_type): 1 where layer l has experts.
    std::string list = "[";
    for (int64_t l = 0; l < m.layers; ++l) list += std::string(l ? "," : "") + (m.is_moe_layer(l) ? "1" : "0");
    a.insert(a.end(), {"--moe-layer-freq", list + "]"});
  }
  if (x.capacity_factor > 0)
    a.insert(a.end(), {"--moe-expert-capacity-factor", number_text(x.capacity_factor)});
}

}  // namespace parallax::megatron_moe
