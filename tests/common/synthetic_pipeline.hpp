#pragma once
// A hand-made simulated pipeline for chart tests: rank r runs forward i on [3i + r, 3i + r + 1)
// and backward i on [3i + r + 1, 3i + r + 3); with the optimizer, every rank then steps on
// [3m + pp + 5, 3m + pp + 6) and the iteration ends there, else it ends at 3m + pp + 3.
#include <cstdint>

#include "parallax/simulator/simulate.hpp"

namespace parallax::test {

inline SimResult synthetic_pipeline(int32_t pp, int32_t m, bool with_optimizer) {
  SimResult sim;
  for (int32_t r = 0; r < pp; ++r) {
    for (int32_t i = 0; i < m; ++i) {
      SimOp f;
      f.rank = r;
      f.micro_batch = i;
      f.start_s = 3.0 * i + r;
      f.duration_s = 1;
      f.kind = SimOpKind::forward;
      SimOp b = f;
      b.start_s += 1;
      b.duration_s = 2;
      b.kind = SimOpKind::backward;
      sim.ops.push_back(f);
      sim.ops.push_back(b);
    }
    if (!with_optimizer) continue;
    SimOp o;
    o.rank = r;
    o.start_s = 3.0 * m + pp + 5;
    o.duration_s = 1;
    o.kind = SimOpKind::optimizer;
    sim.ops.push_back(o);
  }
  sim.iteration_time_s = 3.0 * m + pp + (with_optimizer ? 6 : 3);
  return sim;
}

}  // namespace parallax::test
