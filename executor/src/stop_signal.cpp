#include "parallax/executor/stop_signal.hpp"

#include <csignal>

namespace parallax::exec {
namespace {

// The one piece of process-wide state here, because a signal handler can reach nothing else:
// an async-signal-safe flag holding the signal's number (0 = none).
volatile std::sig_atomic_t& received() {
  static volatile std::sig_atomic_t signal_number = 0;  // constant-initialised: safe before main
  return signal_number;
}

extern "C" void on_stop_signal(int sig) { received() = sig; }

}  // namespace

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // MPI and file calls carry on; the flag is read at the step's end
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);  // Open MPI's mpirun forwards it without ending the job
}

bool stop_requested_anywhere(MPI_Comm world, int* signal_number) {
  int mine = static_cast<int>(received()), any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world);
  if (any != 0 && signal_number) *signal_number = any;
  return any != 0;
}

}  // namespace parallax::exec
