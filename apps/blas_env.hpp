#pragma once
// The environment the CPU kernels need before their libraries load (see blas_env.cpp).
namespace parallax::cli {

// Re-executes this process once with OPENBLAS_CORETYPE (the core the CPU flags call for) and
// OMP_WAIT_POLICY=passive set, unless they are set already. Returns when nothing needs setting
// or the re-exec failed (the process carries on with the defaults).
void reexec_with_openblas_coretype();

}  // namespace parallax::cli
