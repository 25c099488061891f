#include "run_faults.hpp"

#include <csignal>

#include <algorithm>
#include <cmath>

namespace parallax::exec {

FaultInjection::FaultInjection(const RunOptions& o, int world_rank)
    : kill_this_rank_(world_rank == o.fault_rank), kill_step_(o.fault_step), nan_step_(o.fault_nan_step) {}

std::function<void()> FaultInjection::before_step(int64_t s, Trainer& trainer) const {
  if (s + 1 == nan_step_) {
    trainer.pull_params();
    std::fill(trainer.params().begin(), trainer.params().end(), std::nanf(""));
    trainer.push_params();
  }
  if (kill_this_rank_ && s + 1 == kill_step_) return [] { std::raise(SIGKILL); };
  return {};
}

}  // namespace parallax::exec
