#pragma once
// The test faults of `parallax run` (RunOptions' fault_*), kept out of the step loop: before each
// step, the loop asks what to do and gets the hook to run after the gradient reduction.
#include <cstdint>
#include <functional>

#include "parallax/executor/run.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

class FaultInjection {
 public:
  FaultInjection(const RunOptions& o, int world_rank);
  // Before 0-based step `s`: sets every weight to NaN when that step is --fault-nan-step, and
  // returns the hook that kills this rank when it is --fault-kill-rank in --fault-step (else
  // empty).
  std::function<void()> before_step(int64_t s, Trainer& trainer) const;

 private:
  bool kill_this_rank_ = false;
  int64_t kill_step_ = 0;
  int64_t nan_step_ = 0;
};

}  // namespace parallax::exec
