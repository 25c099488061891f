// parallax_cuda_probe: what a GPU node gives the CUDA backend, before anything runs on it
// (scripts/gpu-kit carries it; kit/run-gpu-checks calls it first). Prints one JSON object: the
// devices, the CUDA versions of the driver and the runtime, cuBLAS's and NCCL's versions, and the
// file each of libcuda, libcudart, libcublas and libnccl was loaded from. Without a device it
// prints one line, "no CUDA device (<the runtime's reason>)", and exits 2.
#include <cuda_runtime.h>
#include <link.h>
#include <nccl.h>

#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "parallax/kernels/cuda/blas.hpp"
#include "parallax/kernels/cuda/device.hpp"

namespace {

// The loaded libraries whose file names start with one of `stems`, by stem.
std::map<std::string, std::string> loaded_from(const std::map<std::string, std::string>& stems) {
  struct Ctx {
    const std::map<std::string, std::string>* stems;
    std::map<std::string, std::string> found;
  } ctx{&stems, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Ctx*>(data);
        const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string file = path.substr(path.find_last_of('/') + 1);
        for (const auto& [key, stem] : *c->stems) {
          if (file.rfind(stem, 0) == 0 && c->found.count(key) == 0) c->found[key] = path;
        }
        return 0;
      },
      &ctx);
  return ctx.found;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

int main() {
  namespace cuda = parallax::kernels::cuda;
  std::string why;
  const int devices = cuda::device_count(&why);
  if (devices == 0) {
    std::fprintf(stderr, "no CUDA device (%s)\n", why.c_str());
    return 2;
  }
  nlohmann::json out;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  out["driver_cuda_version"] = version_text(driver);
  out["runtime_cuda_version"] = version_text(runtime);
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    out["devices"].push_back({{"index", d},
                              {"name", prop.name},
                              {"sm", std::to_string(prop.major) + std::to_string(prop.minor)},
                              {"multiprocessors", prop.multiProcessorCount},
                              {"memory_bytes", static_cast<double>(prop.totalGlobalMem)},
                              {"uuid", cuda::device_uuid(d)}});
  }
  try {
    // A handle on the default stream: what the backend's GEMMs run through, with its version.
    const cuda::Blas blas(nullptr);
    out["cublas"] = blas.description();
  } catch (const std::exception& e) {
    out["cublas_error"] = e.what();
  }
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) out["nccl_version"] = nccl;
  out["libraries"] = loaded_from({{"libcuda", "libcuda.so"},
                                  {"libcudart", "libcudart.so"},
                                  {"libcublas", "libcublas.so"},
                                  {"libcublasLt", "libcublasLt.so"},
                                  {"libnccl", "libnccl.so"}});
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
