#include "parallax/kernels/cuda/check.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "parallax/kernels/cuda/blas_loader.hpp"

namespace parallax::kernels::cuda {

namespace {
std::string where(const char* call, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call + ": ";
}
}  // namespace

void throw_cuda(int status, const char* call, const char* file, int line) {
  const auto e = static_cast<cudaError_t>(status);
  throw Error(where(call, file, line) + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void throw_cublas(int status, const char* call, const char* file, int line) {
  throw Error(where(call, file, line) + "cuBLAS status " + std::to_string(status) + " (" +
              blas_status_string(status) + ")");
}

void throw_nccl(int status, const char* call, const char* file, int line) {
  const auto r = static_cast<ncclResult_t>(status);
  std::string last = ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : "";
  throw Error(where(call, file, line) + ncclGetErrorString(r) + (last.empty() ? "" : "; " + last));
}

}  // namespace parallax::kernels::cuda
