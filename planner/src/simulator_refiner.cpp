#include "parallax/planner/simulator_refiner.hpp"

#include "parallax/simulator/sim_inputs.hpp"
#include "parallax/simulator/simulate.hpp"

namespace parallax {

Refiner simulator_refiner(const PlannerInputs& in, const Topology& topo) {
  return [&in, &topo](const PlanSpec& p, const Prediction&) {
    SimOptions opt;
    opt.record_ops = false;  // the planner needs the time only
    opt.record_memory = false;
    return simulate(make_sim_inputs(in.model, topo, in.job, p, in.profile), opt)
        .iteration_time_s;
  };
}

}  // namespace parallax
