#pragma once
// cuBLAS, loaded on first use with dlopen. Linking libcublas (and with it libcublasLt, 517 MB)
// into `parallax` costs every process ~0.09 s and ~215 MB resident before main (measured on the
// build machine: a program linking it vs not), which every CPU run, every CLI call and every
// MPI rank of the CPU backend would pay. The soname is the toolkit's we compile against
// (PARALLAX_CUBLAS_SONAME); the function types are spelled out from cublas_api.h (CUDA 13),
// and the resolved symbols are the ABI names (the _v2 ones the macros map to).
#include <cublas_v2.h>

namespace parallax::kernels::cuda {

struct BlasApi {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*get_version)(cublasHandle_t, int*);
  const char* (*status_string)(cublasStatus_t);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t,
                                            cublasOperation_t, int, int, int, const void*,
                                            const void*, cudaDataType, int, long long int,
                                            const void*, cudaDataType, int, long long int,
                                            const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
};

// Loads libcublas.so.13 once (thread-safe); throws cuda::Error when it or a symbol is missing.
const BlasApi& blas_api();
// cublasGetStatusString when cuBLAS is loaded, else the number.
const char* blas_status_string(int status);

}  // namespace parallax::kernels::cuda
