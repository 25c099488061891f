#include "parallax/kernels/cuda/blas_loader.hpp"

#include <dlfcn.h>

#include <string>

#include "parallax/kernels/cuda/check.hpp"

namespace parallax::kernels::cuda {

namespace {

const BlasApi* g_loaded = nullptr;

template <class F>
void resolve(void* lib, F& fn, const char* name) {
  void* sym = dlsym(lib, name);
  if (!sym) throw Error(std::string("cuBLAS: symbol ") + name + " not found: " + dlerror());
  fn = reinterpret_cast<F>(sym);
}

BlasApi load() {
  void* lib = nullptr;
  for (const char* name : {PARALLAX_CUBLAS_SONAME, "libcublas.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
  }
  if (!lib) throw Error(std::string("cannot load cuBLAS (" PARALLAX_CUBLAS_SONAME "): ") + dlerror());
  BlasApi a{};
  resolve(lib, a.create, "cublasCreate_v2");
  resolve(lib, a.destroy, "cublasDestroy_v2");
  resolve(lib, a.set_stream, "cublasSetStream_v2");
  resolve(lib, a.set_workspace, "cublasSetWorkspace_v2");
  resolve(lib, a.set_math_mode, "cublasSetMathMode");
  resolve(lib, a.get_version, "cublasGetVersion_v2");
  resolve(lib, a.status_string, "cublasGetStatusString");
  resolve(lib, a.gemm_ex, "cublasGemmEx");
  resolve(lib, a.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  return a;  // the library stays loaded for the life of the process
}

}  // namespace

const BlasApi& blas_api() {
  static const BlasApi api = load();
  g_loaded = &api;
  return api;
}

const char* blas_status_string(int status) {
  if (!g_loaded) return "cuBLAS not loaded";
  return g_loaded->status_string(static_cast<cublasStatus_t>(status));
}

}  // namespace parallax::kernels::cuda
