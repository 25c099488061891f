// LayerNorm and RMSNorm (llm.c's formulas; statistics kept for backward).
#include <cmath>

#include "parallax/kernels/cpu.hpp"
#include "parallax/kernels/math.hpp"

namespace parallax::kernels {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    float m = 0.0f;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= static_cast<float>(C);
    float var = 0.0f;
    for (int64_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(var + kNormEps);
    float* y = out + i * C;
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C) {
  // Input gradients are independent per row; weight gradients reduce over rows (serial over
  // rows keeps the summation order fixed).
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    const float* dy = dout + i * C;
    const float* x = inp + i * C;
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[i]) * rstd[i];
      const float dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
    float* dx = dinp + i * C;
    for (int64_t c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[i]) * rstd[i];
      const float dnorm = weight[c] * dy[c];
      dx[c] += layernorm_dinp(dnorm, norm, dnorm_mean, dnorm_norm_mean, rstd[i]);
    }
  }
#pragma omp parallel for
  for (int64_t c = 0; c < C; ++c) {
    float dw = 0.0f, db = 0.0f;
    for (int64_t i = 0; i < N; ++i) {
      const float norm = (inp[i * C + c] - mean[i]) * rstd[i];
      dw += norm * dout[i * C + c];
      db += dout[i * C + c];
    }
    dweight[c] += dw;
    dbias[c] += db;
  }
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    float ss = 0.0f;
    for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
    const float s = 1.0f / std::sqrt(ss / static_cast<float>(C) + kNormEps);
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = x[c] * s * weight[c];
    rstd[i] = s;
  }
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const float* dy = dout + i * C;
    const float s = rstd[i];
    // y = x * s * w, s = (mean(x^2)+eps)^-1/2: dx = s*w*dy - x * s^3/C * sum(w*dy*x)
    float dot = 0.0f;
    for (int64_t c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
    const float k = s * s * s / static_cast<float>(C) * dot;
    for (int64_t c = 0; c < C; ++c) dinp[i * C + c] += rmsnorm_dinp(x[c], weight[c], dy[c], s, k);
  }
#pragma omp parallel for
  for (int64_t c = 0; c < C; ++c) {
    float dw = 0.0f;
    for (int64_t i = 0; i < N; ++i) dw += inp[i * C + c] * rstd[i] * dout[i * C + c];
    dweight[c] += dw;
  }
}

}  // namespace parallax::kernels
