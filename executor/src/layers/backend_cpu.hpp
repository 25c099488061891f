#pragma once
// The CPU backend of the executor's chunk and trainer templates: fp32 everywhere, host
// vectors, the kernels of kernels/cpu.hpp (BLAS, OpenMP), MPI through exec::Comm, wall-clock
// timing. Every op here is the call the executor made before the backends were split, in the
// same order, so CPU results are unchanged.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/executor/comm/comm.hpp"
#include "parallax/executor/recorder.hpp"
#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

class CpuBackend {
 public:
  using act = float;
  using wt = float;
  template <class T>
  using Buffer = std::vector<T>;
  template <class T>
  using HostBuffer = std::vector<T>;
  using Comm = exec::Comm;
  struct StashSync {};
  static constexpr bool kMixed = false;  // no separate master weights
  static constexpr const char* kName = "cpu";
  static constexpr bool kFlashAttention = true;  // kernels::flash_attention_forward/backward
  static constexpr bool kMoe = true;             // mixture-of-experts layers (moe_layer.hpp)

  explicit CpuBackend(Recorder& rec) : rec_(rec) {}

  template <class T>
  Buffer<T> alloc(int64_t n) const {
    return Buffer<T>(static_cast<size_t>(n), T{});
  }
  template <class T>
  HostBuffer<T> host_alloc(int64_t n) const {
    return HostBuffer<T>(static_cast<size_t>(n), T{});
  }
  template <class T>
  void upload(T* dst, const T* src, int64_t n) const {
    std::copy(src, src + n, dst);
  }
  void reserve_attention(int64_t, int64_t, int64_t) {}

  // Timing (wall clock).
  template <class F>
  void time(const std::string& name, double flops, const std::string& shape, F&& f,
            Stream stream = Stream::compute) {
    const double t0 = rec_.now_s();
    f();
    rec_.add(name, stream, t0, rec_.now_s(), flops, 0, shape);
  }
  using Mark = double;
  Mark mark() const { return rec_.now_s(); }
  void span(const std::string& name, Mark start, int64_t micro_batch, int64_t chunk) {
    rec_.span(name, start, rec_.now_s(), micro_batch, chunk);
  }
  // Host times of the step's start and end.
  double begin_step() { return rec_.now_s(); }
  double finish_step() { return rec_.now_s(); }
  void wait_sent(StashSync&, P2PDir) {}

  template <class T>
  void zero(T* x, int64_t n) const {
    std::fill(x, x + n, T{});
  }
  template <class T>
  void copy(T* dst, const T* src, int64_t n) const {
    std::copy(src, src + n, dst);
  }

  void matmul_forward(float* out, const float* inp, const float* w, const float* b, int64_t N,
                      int64_t C, int64_t OC) {
    kernels::matmul_forward(out, inp, w, b, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                       const float* w, int64_t N, int64_t C, int64_t OC) {
    kernels::matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
  }
  void bias_forward(float* out, const float* b, int64_t N, int64_t C) { kernels::bias_forward(out, b, N, C); }
  void bias_backward(float* db, const float* dout, int64_t N, int64_t C) { kernels::bias_backward(db, dout, N, C); }
  void residual_forward(float* out, const float* a, const float* b, int64_t n) {
    kernels::residual_forward(out, a, b, n);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                         const float* b, int64_t N, int64_t C) {
    kernels::layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  }
  void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                          const float* w, const float* mean, const float* rstd, int64_t N,
                          int64_t C) {
    kernels::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int64_t N,
                       int64_t C) {
    kernels::rmsnorm_forward(out, rstd, inp, w, N, C);
  }
  void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp,
                        const float* w, const float* rstd, int64_t N, int64_t C) {
    kernels::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
  }
  void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                         int64_t C, int64_t NH, int64_t KVH) {
    kernels::attention_forward(out, att, qkv, B, T, C, NH, KVH);
  }
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                          int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH) {
    kernels::attention_backward(dqkv, dout, qkv, att, B, T, C, NH, KVH);
  }
  void flash_attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                               int64_t C, int64_t NH, int64_t KVH) {
    kernels::flash_attention_forward(out, lse, qkv, B, T, C, NH, KVH);
  }
  void flash_attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                const float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                                int64_t KVH) {
    kernels::flash_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, KVH);
  }
  // Context parallelism: local query rows against the gathered sequence's keys and values.
  void flash_attention_rows_forward(float* out, float* lse, const kernels::FlashRows& r) {
    kernels::flash_attention_rows_forward(out, lse, r);
  }
  void flash_attention_rows_backward(float* dq, float* dk, float* dv, const float* dout,
                                     const float* out, const float* lse, const kernels::FlashRows& r) {
    kernels::flash_attention_rows_backward(dq, dk, dv, dout, out, lse, r);
  }
  void rope_forward(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                    const float* inv_freq, int64_t row0, int64_t T) {
    kernels::rope_forward(x, rows, row_stride, heads, head_dim, inv_freq, row0, T);
  }
  void rope_backward(float* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                     const float* inv_freq, int64_t row0, int64_t T) {
    kernels::rope_backward(dx, rows, row_stride, heads, head_dim, inv_freq, row0, T);
  }
  void gelu_forward(float* out, const float* inp, int64_t n) { kernels::gelu_forward(out, inp, n); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
    kernels::gelu_backward(dinp, inp, dout, n);
  }
  void swiglu_forward(float* out, const float* inp, int64_t N, int64_t F) {
    kernels::swiglu_forward(out, inp, N, F);
  }
  void swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F) {
    kernels::swiglu_backward(dinp, inp, dout, N, F);
  }
  void embedding_forward(float* out, const int32_t* tokens, const float* wte, int64_t vstart,
                         int64_t vrows, int64_t N, int64_t C) {
    kernels::embedding_forward(out, tokens, wte, vstart, vrows, N, C);
  }
  void embedding_backward(float* dwte, const float* dout, const int32_t* tokens, int64_t vstart,
                          int64_t vrows, int64_t N, int64_t C) {
    kernels::embedding_backward(dwte, dout, tokens, vstart, vrows, N, C);
  }
  void position_forward_rows(float* out, const float* wpe, int64_t row0, int64_t rows, int64_t T,
                             int64_t C) {
    kernels::position_forward_rows(out, wpe, row0, rows, T, C);
  }
  void position_backward_rows(float* dwpe, const float* dout, int64_t row0, int64_t rows,
                              int64_t T, int64_t C) {
    kernels::position_backward_rows(dwpe, dout, row0, rows, T, C);
  }
  void crossentropy_local_max(float* maxes, const float* logits, int64_t N, int64_t V,
                              int64_t valid) {
    kernels::crossentropy_local_max(maxes, logits, N, V, valid);
  }
  void crossentropy_local_sums(float* sums, float* target, const float* logits,
                               const float* maxes, const int32_t* targets, int64_t vstart,
                               int64_t N, int64_t V, int64_t valid) {
    kernels::crossentropy_local_sums(sums, target, logits, maxes, targets, vstart, N, V, valid);
  }
  void crossentropy_finish(float* losses, float* logits, const float* maxes, const float* sums,
                           const float* target, const int32_t* targets, int64_t vstart,
                           float dloss, int64_t N, int64_t V, int64_t valid) {
    kernels::crossentropy_finish(losses, logits, maxes, sums, target, targets, vstart, dloss, N,
                                 V, valid);
  }
  void add_loss(double* acc, const float* losses, int64_t N, float dloss) {
    double loss = 0.0;
    for (int64_t i = 0; i < N; ++i) loss += static_cast<double>(losses[i]);
    *acc += loss * static_cast<double>(dloss);
  }

  // Optimizer-side ops on the flat fp32 buffers.
  void tied_sum(float* a, float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) b[i] = a[i] = a[i] + b[i];
  }
  double* scalar(int i) { return &scalars_[i]; }
  void zero_scalar(double* s) { *s = 0.0; }
  double read_scalar(const double* s) const { return *s; }
  void sum_squares_add(double* acc, const float* x, int64_t n) { *acc += kernels::sum_squares(x, n); }
  void clip(float* x, int64_t n, const double* norm_sq, float clip) {
    const double norm = std::sqrt(*norm_sq);
    if (clip > 0 && norm > clip) {
      const float scale = static_cast<float>(clip / (norm + 1e-6));
      kernels::scale_inplace(x, scale, n);
    }
  }

  // Parameters: the fp32 params are both the working and the master copy.
  struct Params {
    Buffer<float> params, grads, m, v;  // params, grads (padded); m, v (own shard)
    wt* working() { return params.data(); }
  };
  Params make_params(int64_t padded, int64_t shard) const {
    return {alloc<float>(padded), alloc<float>(padded), alloc<float>(shard), alloc<float>(shard)};
  }
  nlohmann::json params_bytes_json(const Params& P) const {
    auto bytes = [](const Buffer<float>& b) { return 4.0 * static_cast<double>(b.size()); };
    return {{"params", bytes(P.params)}, {"grads", bytes(P.grads)}, {"adam_m", bytes(P.m)},
            {"adam_v", bytes(P.v)}};
  }
  nlohmann::json memory_json() const { return nlohmann::json::object(); }
  void adamw(Params& P, int64_t a, int64_t b, int64_t shard_begin, const kernels::AdamW& h,
             int64_t step, bool decay) {
    kernels::adamw_update(P.params.data() + a, P.grads.data() + a, P.m.data() + (a - shard_begin),
                          P.v.data() + (a - shard_begin), b - a, h, step, decay);
  }

 private:
  Recorder& rec_;
  double scalars_[2] = {0.0, 0.0};
};

}  // namespace parallax::exec
