#include "parallax/kernels/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "parallax/kernels/cuda/check.hpp"

namespace parallax::kernels::cuda {

std::string request_eager_module_loading() {
  if (const char* v = std::getenv("CUDA_MODULE_LOADING"); v != nullptr && *v != '\0') return v;
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  return "EAGER";
}

int device_count(std::string* why) {
  request_eager_module_loading();
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) {
      int driver = 0, runtime = 0;
      if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
      if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = CUDART_VERSION;
      *why = no_device_reason(e == cudaErrorInsufficientDriver, driver, runtime,
                              std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
    }
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount found 0 devices";
  return n;
}

void keep_stream_ordered_pool(int device) {
  cudaMemPool_t pool = nullptr;
  PX_CUDA(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t unlimited = UINT64_MAX;
  PX_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &unlimited));
}

std::string device_description(int device) {
  cudaDeviceProp p{};
  PX_CUDA(cudaGetDeviceProperties(&p, device));
  char buf[320];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %.1f GiB)", p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string device_uuid(int device) {
  cudaDeviceProp p{};
  PX_CUDA(cudaGetDeviceProperties(&p, device));
  // nvidia-smi's grouping: 8-4-4-4-12 hex digits.
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(p.uuid.bytes[i]));
    out += hex;
  }
  return out;
}

std::string runtime_version() {
  int v = 0;
  PX_CUDA(cudaRuntimeGetVersion(&v));
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace parallax::kernels::cuda
