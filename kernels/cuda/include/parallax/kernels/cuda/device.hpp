#pragma once
// The devices of this process, checked without throwing: `parallax run --backend cuda` on a
// machine without a GPU (or a driver) must end with one line and exit code 2.
#include <string>

namespace parallax::kernels::cuda {

// Number of CUDA devices; 0 (and the runtime's reason in *why) when there is none or no driver.
// The first CUDA call of a process: it asks for eager module loading first
// (request_eager_module_loading).
int device_count(std::string* why = nullptr);

// Sets CUDA_MODULE_LOADING=EAGER unless the environment already says: CUDA's default since 12.2
// is lazy loading, where the first launch of a kernel (a new cuBLAS kernel too) may wait for the
// device to go idle, which mid-step, with sends spinning on other streams for a peer, can
// deadlock a pipeline's first step. Read by the driver at initialisation: effective only
// before the process's first CUDA call. Returns the value in force ("EAGER" unless the user
// chose otherwise).
std::string request_eager_module_loading();
// The reductions' scratch comes from the device's stream-ordered pool (cudaMallocAsync, freed
// with cudaFreeAsync after its kernels). This keeps what the pool holds across
// synchronisations (release threshold: unlimited), so after the first step the scratch is
// reused from the pool and no step asks the driver for memory.
void keep_stream_ordered_pool(int device);
// "NVIDIA A100-SXM4-80GB (sm_80, 79.2 GiB)".
std::string device_description(int device);
// The runtime version as "13.0".
std::string runtime_version();
// The device's UUID as nvidia-smi prints it ("GPU-3f2a...-..."): the same GPU has the same UUID
// whatever ordinal CUDA_VISIBLE_DEVICES gives it in a process.
std::string device_uuid(int device);

// Why the runtime found no device, in words a user can act on. driver_too_old: the runtime said
// cudaErrorInsufficientDriver; driver_cuda_version: what cudaDriverGetVersion reports (12040 =
// CUDA 12.4; 0 = no driver loaded); runtime_cuda_version: cudaRuntimeGetVersion's (13000).
std::string no_device_reason(bool driver_too_old, int driver_cuda_version, int runtime_cuda_version,
                             const std::string& runtime_error);

}  // namespace parallax::kernels::cuda
