#include "parallax/kernels/cuda/blas.hpp"

#include <limits>

#include "parallax/kernels/cuda/blas_loader.hpp"
#include "parallax/kernels/cuda/check.hpp"

namespace parallax::kernels::cuda {

struct Blas::Impl {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};

namespace {

int as_int(int64_t x, const char* what) {
  if (x < 0 || x > std::numeric_limits<int>::max())
    throw Error(std::string("cuBLAS GEMM: ") + what + " = " + std::to_string(x) + " does not fit an int");
  return static_cast<int>(x);
}

cudaDataType cuda_type(DType t) { return t == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

Blas::Blas(cudaStream_t stream, size_t workspace_bytes) : impl_(std::make_unique<Impl>()), stream_(stream) {
  const BlasApi& api = blas_api();
  PX_CUBLAS(api.create(&impl_->handle));
  PX_CUBLAS(api.set_stream(impl_->handle, stream));
  PX_CUDA(cudaMalloc(&impl_->workspace, workspace_bytes));
  PX_CUBLAS(api.set_workspace(impl_->handle, impl_->workspace, workspace_bytes));
  PX_CUBLAS(api.set_math_mode(impl_->handle, CUBLAS_DEFAULT_MATH));
}

Blas::~Blas() {
  // Destructors do not throw: a failure here is reported by the next checked call.
  if (impl_->handle) blas_api().destroy(impl_->handle);
  if (impl_->workspace) cudaFree(impl_->workspace);
}

void Blas::gemm(const RowMajorGemm& g, float alpha, const void* A, DType a_type, const void* B,
                DType b_type, float beta, void* C, DType c_type) const {
  const ColMajorGemm c = to_col_major(g);
  const BlasApi& api = blas_api();
  const void* first = c.first_is_b ? B : A;
  const void* second = c.first_is_b ? A : B;
  const DType first_type = c.first_is_b ? b_type : a_type;
  const DType second_type = c.first_is_b ? a_type : b_type;
  if (c.batch == 1) {
    PX_CUBLAS(api.gemm_ex(impl_->handle, op(c.trans_first), op(c.trans_second), as_int(c.m, "m"),
                          as_int(c.n, "n"), as_int(c.k, "k"), &alpha, first, cuda_type(first_type),
                          as_int(c.ld_first, "lda"), second, cuda_type(second_type),
                          as_int(c.ld_second, "ldb"), &beta, C, cuda_type(c_type),
                          as_int(c.ldc, "ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    PX_CUBLAS(api.gemm_strided_batched_ex(
        impl_->handle, op(c.trans_first), op(c.trans_second), as_int(c.m, "m"), as_int(c.n, "n"),
        as_int(c.k, "k"), &alpha, first, cuda_type(first_type), as_int(c.ld_first, "lda"),
        c.stride_first, second, cuda_type(second_type), as_int(c.ld_second, "ldb"),
        c.stride_second, &beta, C, cuda_type(c_type), as_int(c.ldc, "ldc"), c.stride_c,
        as_int(c.batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

std::string Blas::description() const {
  int version = 0;
  PX_CUBLAS(blas_api().get_version(impl_->handle, &version));
  return "cublasGemmEx bf16 x bf16, fp32 accumulation (CUBLAS_COMPUTE_32F), cuBLAS " +
         std::to_string(version);
}

}  // namespace parallax::kernels::cuda
