#include "parallax/core/schedule.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

// The executor walks the same tables as the simulator (docs/design.md §6); pp = 1 gives F0 B0 F1 B1...
ScheduleTable plan_schedule(const PlanSpec& p) {
  return make_schedule(p.schedule, p.pp, p.vpp, p.num_micro_batches, p.microbatch_group);
}

}  // namespace parallax::exec
