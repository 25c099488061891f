#pragma once
// The devices of this process, checked without throwing: `parallax run --backend cuda` on a
// machine without a GPU (or a driver) must end with one line and exit code 2.
#include <string>

namespace parallax::kernels::cuda {

// Number of CUDA devices; 0 (and the runtime's reason in *why) when there is none or no driver.
int device_count(std::string* why = nullptr);
// "NVIDIA A100-SXM4-80GB (sm_80, 79.2 GiB)".
std::string device_description(int device);
// The runtime version as "13.0".
std::string runtime_version();

}  // namespace parallax::kernels::cuda
