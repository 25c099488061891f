#include "parallax/planner/simulator_refiner.hpp"

#include <stdexcept>

#include "parallax/simulator/sim_inputs.hpp"
#include "parallax/simulator/simulate.hpp"

namespace parallax {

Refiner simulator_refiner(const PlannerInputs& in) {
  // The prediction's own costs and memory (Prediction::costs): nothing is computed twice.
  return [&in](const PlanSpec& p, const Prediction& pred) {
    if (pred.costs.stages.size() != static_cast<size_t>(p.pp)) {
      throw std::logic_error("simulator_refiner: the prediction holds no costs (it was not priced)");
    }
    SimOptions opt;
    opt.record_ops = false;  // the planner needs the time only
    opt.record_memory = false;
    return simulate(make_sim_inputs(in.model, in.job, p, pred.costs, pred.memory), opt)
        .iteration_time_s;
  };
}

}  // namespace parallax
