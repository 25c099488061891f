#pragma once
// Every CUDA runtime, cuBLAS and NCCL call goes through one of these macros: a failure throws
// cuda::Error naming the file, the line, the call and the library's own message. Kernel launches
// are followed by PX_CUDA_LAUNCH_CHECK() (cudaGetLastError: does not synchronise).
#include <stdexcept>
#include <string>

namespace parallax::kernels::cuda {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throw helpers (defined in check.cpp) so the macros stay small and headers need no CUDA
// library headers beyond the status types.
[[noreturn]] void throw_cuda(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl(int status, const char* call, const char* file, int line);

}  // namespace parallax::kernels::cuda

#define PX_CUDA(call)                                                                      \
  do {                                                                                     \
    const int px_status_ = static_cast<int>(call);                                         \
    if (px_status_ != 0) ::parallax::kernels::cuda::throw_cuda(px_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define PX_CUBLAS(call)                                                                    \
  do {                                                                                     \
    const int px_status_ = static_cast<int>(call);                                         \
    if (px_status_ != 0) ::parallax::kernels::cuda::throw_cublas(px_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define PX_NCCL(call)                                                                      \
  do {                                                                                     \
    const int px_status_ = static_cast<int>(call);                                         \
    if (px_status_ != 0) ::parallax::kernels::cuda::throw_nccl(px_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define PX_CUDA_LAUNCH_CHECK() PX_CUDA(cudaGetLastError())
