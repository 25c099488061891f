#pragma once
// cuBLAS GEMMs in the executor's row-major terms (gemm_args.hpp): bf16 operands, fp32
// accumulation (CUBLAS_COMPUTE_32F), output bf16 or fp32. One handle per stream, with a
// workspace allocated once at construction (cublasSetWorkspace), so no GEMM allocates.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "parallax/kernels/cuda/gemm_args.hpp"
#include "parallax/kernels/cuda/linear_plan.hpp"

namespace parallax::kernels::cuda {

class Blas {
 public:
  // 32 MiB: what NVIDIA recommends for Hopper (and plenty for Ampere).
  explicit Blas(cudaStream_t stream, size_t workspace_bytes = size_t{32} << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // C = alpha * op(A) op(B) + beta * C (row-major; batched when g.batch > 1).
  void gemm(const RowMajorGemm& g, float alpha, const void* A, DType a_type, const void* B,
            DType b_type, float beta, void* C, DType c_type) const;
  cudaStream_t stream() const { return stream_; }
  // e.g. "cublasGemmEx bf16 x bf16, fp32 accumulation (CUBLAS_COMPUTE_32F), cuBLAS 130000"
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace parallax::kernels::cuda
