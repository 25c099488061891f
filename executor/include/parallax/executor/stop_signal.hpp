#pragma once
// SIGTERM (and SIGINT, SIGUSR1) as a request to stop cleanly, the way a cluster scheduler ends a
// job (SLURM's scancel sends SIGTERM to every task; Open MPI's mpirun forwards SIGUSR1 to the
// ranks and waits for them, while on SIGTERM it forwards it and SIGKILLs the ranks after
// odls_base_sigkill_timeout seconds, 1 by default):
// the signal only sets a flag; at each step boundary every rank asks the world whether any rank
// got one, and if so all of them finish that step, write a checkpoint and exit 0.
#include <mpi.h>

namespace parallax::exec {

// Installs the handlers (idempotent). Signals before this call keep their default action.
void install_stop_handlers();
// Collective over `world`: whether any rank received one of them since install. The number
// of the first signal seen anywhere goes to *signal_number when one did.
bool stop_requested_anywhere(MPI_Comm world, int* signal_number);

}  // namespace parallax::exec
