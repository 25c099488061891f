#include "parallax/core/error.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

ScheduleTable plan_schedule(const PlanSpec& p) {
#if PARALLAX_HAVE_SCHEDULE
  return make_schedule(p.schedule, p.pp, p.vpp, p.num_micro_batches);
#else
  // Until core's schedule tables land only pp = 1 can run: micro-batches one after another.
  if (p.pp != 1 || p.vpp != 1)
    throw InputError("plan", "$.plan.pp", "pipeline schedules are not available in this build");
  ScheduleTable t;
  t.schedule = p.schedule;
  t.num_micro_batches = p.num_micro_batches;
  t.ranks.resize(1);
  for (int64_t i = 0; i < p.num_micro_batches; ++i) {
    t.ranks[0].push_back({StepKind::forward, i, 0});
    t.ranks[0].push_back({StepKind::backward, i, 0});
  }
  return t;
#endif
}

}  // namespace parallax::exec
