#pragma once
// The environment the CPU kernels need before their libraries load (see blas_env.cpp).
#include <functional>

namespace parallax::cli {

// Re-executes this process once with OPENBLAS_CORETYPE (the core the CPU flags call for) and
// OMP_WAIT_POLICY=passive set, unless they are set already. Returns when nothing needs setting
// or the re-exec failed (the process carries on with the defaults).
void reexec_with_openblas_coretype();

// The life of one MPI rank of a CPU-kernel command (run, the calibrate worker): the re-exec
// above, MPI_Init, body(rank), MPI_Finalize. Bad input is found identically on every rank, so
// rank 0 reports it and every rank returns kExitBadInput; a RunFailure (agreed by all ranks)
// returns kExitRunFailed the same way; any other exception aborts the job.
int run_as_mpi_rank(const std::function<void(int rank)>& body);

}  // namespace parallax::cli
