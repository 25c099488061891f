// A plan as one line of text, shared by the CLI and the GUI.
#include "parallax/inputs/plan_text.hpp"

namespace parallax {

std::string plan_line(const PlanSpec& p) {
  std::string s = "tp=" + std::to_string(p.tp) + (p.cp > 1 ? " cp=" + std::to_string(p.cp) : "") +
                  " pp=" + std::to_string(p.pp) + " dp=" + std::to_string(p.dp);
  if (p.ep > 1) s += " ep=" + std::to_string(p.ep);
  if (p.etp != 0) s += " etp=" + std::to_string(p.etp);
  if (p.moe_dispatcher != MoeDispatcher::alltoall) s += std::string(" dispatcher=") + to_string(p.moe_dispatcher);
  if (p.vpp > 1) s += " vpp=" + std::to_string(p.vpp);
  if (p.microbatch_group != 0) s += " group=" + std::to_string(p.microbatch_group);
  if (p.first_stage_layers > 0) s += " first=" + std::to_string(p.first_stage_layers);
  if (p.last_stage_layers > 0) s += " last=" + std::to_string(p.last_stage_layers);
  if (p.embedding_in_split) s += " embedding-in-split";
  if (p.loss_in_split) s += " loss-in-split";
  s += " mbs=" + std::to_string(p.micro_batch) + " m=" + std::to_string(p.num_micro_batches) +
       " schedule=" + to_string(p.schedule) + " recompute=" + to_string(p.recompute) +
       (p.sequence_parallel ? " sp" : "") + " zero=" + std::to_string(p.zero) +
       " order=" + placement_order(p.order, p.cp);  // where cp sits, when the order omits it
  return s;
}

}  // namespace parallax
