// GEMMs through BLAS sgemm (row-major); the naive triple loop is the tests' oracle.
#include <cblas.h>

#include "parallax/kernels/cpu.hpp"

namespace parallax::kernels {

namespace {
blasint to_blas(int64_t x) { return static_cast<blasint>(x); }
}  // namespace

void bias_forward(float* out, const float* bias, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < C; ++j) out[i * C + j] += bias[j];
}

void bias_backward(float* dbias, const float* dout, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t j = 0; j < C; ++j) {
    float s = 0.0f;
    for (int64_t i = 0; i < N; ++i) s += dout[i * C + j];
    dbias[j] += s;
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int64_t N, int64_t C, int64_t OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, to_blas(N), to_blas(OC), to_blas(C), 1.0f,
              inp, to_blas(C), weight, to_blas(C), 0.0f, out, to_blas(OC));
  if (bias) bias_forward(out, bias, N, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int64_t N, int64_t C, int64_t OC) {
  if (dinp)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, to_blas(N), to_blas(C), to_blas(OC),
                1.0f, dout, to_blas(OC), weight, to_blas(C), 1.0f, dinp, to_blas(C));
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, to_blas(OC), to_blas(C), to_blas(N), 1.0f,
              dout, to_blas(OC), inp, to_blas(C), 1.0f, dweight, to_blas(C));
  if (dbias) bias_backward(dbias, dout, N, OC);
}

void matmul_forward_naive(float* out, const float* inp, const float* weight, const float* bias,
                          int64_t N, int64_t C, int64_t OC) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < OC; ++o) {
      double s = bias ? bias[o] : 0.0;
      for (int64_t c = 0; c < C; ++c)
        s += static_cast<double>(inp[i * C + c]) * static_cast<double>(weight[o * C + c]);
      out[i * OC + o] = static_cast<float>(s);
    }
}

}  // namespace parallax::kernels
