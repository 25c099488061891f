// The words for "no CUDA device" (device.hpp): host code, no CUDA calls, tested without a GPU.
#include <string>

#include "parallax/kernels/cuda/device.hpp"

namespace parallax::kernels::cuda {
namespace {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// The oldest Linux driver each CUDA major version's runtime runs on (CUDA Toolkit release notes,
// Table 3 "CUDA Toolkit and Corresponding Driver Versions": CUDA 12.0 GA >= 525.60.13, CUDA 13.0
// GA >= 580.65.06); 0 when this file does not know the major.
int minimum_driver_branch(int runtime_cuda_version) {
  switch (runtime_cuda_version / 1000) {
    case 12: return 525;
    case 13: return 580;
    default: return 0;
  }
}

}  // namespace

std::string no_device_reason(bool driver_too_old, int driver_cuda_version, int runtime_cuda_version,
                             const std::string& runtime_error) {
  // Without libcuda the runtime says "driver insufficient" too: no driver at all comes first.
  if (driver_cuda_version == 0) return "no NVIDIA driver is loaded (" + runtime_error + ")";
  if (driver_too_old) {
    const int branch = minimum_driver_branch(runtime_cuda_version);
    std::string s = "the NVIDIA driver supports CUDA " + cuda_version_text(driver_cuda_version) +
                    ", older than this build's CUDA runtime " + cuda_version_text(runtime_cuda_version) +
                    " (" + runtime_error + ")";
    if (branch > 0)
      s += "; CUDA " + std::to_string(runtime_cuda_version / 1000) + " needs driver R" +
           std::to_string(branch) + " or newer";
    return s + ": update the driver, or build Parallax with a CUDA toolkit the driver supports";
  }
  return runtime_error;
}

}  // namespace parallax::kernels::cuda
