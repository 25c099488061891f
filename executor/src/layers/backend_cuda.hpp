#pragma once
// The CUDA backend of the executor's chunk and trainer templates (built with PARALLAX_CUDA).
//
// Precision (the 18 bytes/param of the memory model): bf16 weights (the working copy the GEMMs
// read) and activations, fp32 weight gradients, fp32 master weights and Adam m, v on the own
// (ZeRO-1) shard. GEMMs: cuBLAS, bf16 operands, fp32 accumulation. Everything else: the
// kernels of parallax::kernels_cuda, whose per-element math is kernels/math.hpp.
//
// Streams and ordering, all explicit: one compute stream (every kernel, GEMM, memset and copy
// of the step); a TP stream and a DP stream for collectives; one stream per pipeline channel
// (see CudaComm). A collective's stream first waits for the compute stream (its input is
// ready), the compute stream then waits for the collective (its output is used next). A
// receive waits for the compute stream and for the last send from its buffer (a stash event),
// and the compute stream for the receive; a send waits for the compute stream and records
// that event in the stash it sends from; the compute stream waits for a stash's forward send
// before reusing the stash (tests/executor/test_pipeline_streams.cpp plays these rules for
// every schedule on a model device where sends block until received). No host-device
// synchronisation inside a step: the host waits once, in finish_step, for the loss, the
// gradient norm and the timings (the test-only gradient dump also waits).
//
// Memory: every device buffer is allocated when the trainer is built (parameters, stashes for
// the micro-batches the schedule keeps in flight, scratch, the attention and cuBLAS
// workspaces); nothing is allocated inside a step.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/executor/comm/comm.hpp"
#include "parallax/executor/comm/nccl_comm.hpp"
#include "parallax/executor/recorder.hpp"
#include "parallax/kernels/cuda/blas.hpp"
#include "parallax/kernels/cuda/check.hpp"
#include "parallax/kernels/cuda/ops.hpp"

namespace parallax::exec {

using kernels::bf16;

// Device memory, zero-filled at allocation.
void* device_alloc(size_t bytes);
void device_free(void* p);

// The bytes a backend's buffers hold, for measurements.json. Each buffer shares ownership of its
// backend's count, so the order in which buffers and backend are destroyed does not matter.
struct DeviceBytes {
  size_t allocated = 0;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int64_t n, std::shared_ptr<DeviceBytes> count)
      : p_(static_cast<T*>(device_alloc(sizeof(T) * static_cast<size_t>(n)))),
        n_(static_cast<size_t>(n)),
        count_(std::move(count)) {
    if (count_) count_->allocated += sizeof(T) * n_;
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), count_(std::move(o.count_)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      count_ = std::move(o.count_);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (!p_) return;
    device_free(p_);
    if (count_) count_->allocated -= sizeof(T) * n_;
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
  std::shared_ptr<DeviceBytes> count_;
};

// Page-locked host memory (the step's tokens): a copy from it is asynchronous, where one from
// pageable memory may make the host wait.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(int64_t n) : n_(static_cast<size_t>(n)) {
    void* p = nullptr;
    PX_CUDA(cudaMallocHost(&p, sizeof(T) * std::max<size_t>(n_, 1)));
    p_ = static_cast<T*>(p);
    for (size_t i = 0; i < n_; ++i) p_[i] = T{};
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (p_) cudaFreeHost(p_);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// CUDA events timing the step's ops on their streams; resolved into the Recorder (same
// measurements.json and trace as the CPU backend) once the step has finished.
class EventTimer {
 public:
  ~EventTimer();
  int record(cudaStream_t s);
  void begin(cudaStream_t compute, double host_now);
  void add(const std::string& name, Stream stream, double flops, double bytes,
           const std::string& shape, const std::string& group, int e0, int e1);
  void add_span(const std::string& name, int e0, int e1, int64_t micro_batch, int64_t chunk);
  // After the step's work has completed.
  void resolve(Recorder& rec);

 private:
  struct Op {
    std::string name, shape, group;
    Stream stream = Stream::compute;
    double flops = 0, bytes = 0;
    int e0 = 0, e1 = 0;
    int64_t micro_batch = -1, chunk = -1;
    bool span = false;
  };
  std::vector<cudaEvent_t> events_;
  size_t next_ = 0;
  std::vector<Op> ops_;
  int origin_ = -1;
  double origin_host_ = 0;
  bool in_step_ = false;
};

class CudaComm;

class CudaBackend {
 public:
  using act = bf16;
  using wt = bf16;
  template <class T>
  using Buffer = DeviceBuffer<T>;
  template <class T>
  using HostBuffer = PinnedBuffer<T>;
  using Comm = CudaComm;
  static constexpr bool kMixed = true;
  static constexpr const char* kName = "cuda";
  // Attention runs as cuBLAS GEMMs around a softmax kernel (the s x s scores materialised); no
  // fused kernel: run.cpp refuses a plan whose job asks for fused attention.
  static constexpr bool kFlashAttention = false;

  // Send-completion events of a stash (waited for before the stash is reused).
  class StashSync {
   public:
    StashSync();
    ~StashSync();
    StashSync(const StashSync&) = delete;
    StashSync& operator=(const StashSync&) = delete;
    cudaEvent_t forward_sent = nullptr, backward_sent = nullptr;
  };

  // Chooses nothing: the caller has called cudaSetDevice.
  CudaBackend(Recorder& rec, int device);
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  cudaStream_t compute() const { return compute_; }
  EventTimer& timer() { return timer_; }
  const kernels::cuda::Blas& blas() const { return *blas_; }
  // e -> waits until `before` has done what was enqueued so far.
  void order(cudaStream_t after, cudaStream_t before);

  template <class T>
  Buffer<T> alloc(int64_t n) const {
    return Buffer<T>(n, device_bytes_);
  }
  template <class T>
  HostBuffer<T> host_alloc(int64_t n) const {
    return HostBuffer<T>(n);
  }
  template <class T>
  void upload(T* dst, const T* src, int64_t n) {
    PX_CUDA(cudaMemcpyAsync(dst, src, sizeof(T) * static_cast<size_t>(n), cudaMemcpyHostToDevice, compute_));
  }
  void reserve_attention(int64_t B, int64_t T, int64_t NH);

  template <class F>
  void time(const std::string& name, double flops, const std::string& shape, F&& f,
            Stream stream = Stream::compute) {
    const int e0 = timer_.record(compute_);
    f();
    const int e1 = timer_.record(compute_);
    timer_.add(name, stream, flops, 0, shape, "", e0, e1);
  }
  using Mark = int;
  Mark mark() { return timer_.record(compute_); }
  void span(const std::string& name, Mark start, int64_t micro_batch, int64_t chunk) {
    timer_.add_span(name, start, timer_.record(compute_), micro_batch, chunk);
  }
  double begin_step();
  double finish_step();
  // The compute stream waits until the stash's last send in that direction has completed.
  void wait_sent(StashSync& s, P2PDir dir);

  template <class T>
  void zero(T* x, int64_t n) {
    PX_CUDA(cudaMemsetAsync(x, 0, sizeof(T) * static_cast<size_t>(n), compute_));
  }
  template <class T>
  void copy(T* dst, const T* src, int64_t n) {
    PX_CUDA(cudaMemcpyAsync(dst, src, sizeof(T) * static_cast<size_t>(n), cudaMemcpyDeviceToDevice, compute_));
  }

  void matmul_forward(bf16* out, const bf16* inp, const bf16* w, const bf16* b, int64_t N,
                      int64_t C, int64_t OC) {
    kernels::cuda::matmul_forward(*blas_, out, inp, w, b, N, C, OC);
  }
  void matmul_backward(bf16* dinp, float* dw, float* db, const bf16* dout, const bf16* inp,
                       const bf16* w, int64_t N, int64_t C, int64_t OC) {
    kernels::cuda::matmul_backward(*blas_, dinp, dw, db, dout, inp, w, N, C, OC);
  }
  void bias_forward(bf16* out, const bf16* b, int64_t N, int64_t C) {
    kernels::cuda::bias_forward(out, b, N, C, compute_);
  }
  void bias_backward(float* db, const bf16* dout, int64_t N, int64_t C) {
    kernels::cuda::bias_backward(db, dout, N, C, compute_);
  }
  void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n) {
    kernels::cuda::residual_forward(out, a, b, n, compute_);
  }
  void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* w,
                         const bf16* b, int64_t N, int64_t C) {
    kernels::cuda::layernorm_forward(out, mean, rstd, inp, w, b, N, C, compute_);
  }
  void layernorm_backward(bf16* dinp, float* dw, float* db, const bf16* dout, const bf16* inp,
                          const bf16* w, const float* mean, const float* rstd, int64_t N,
                          int64_t C) {
    kernels::cuda::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, compute_);
  }
  void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* w, int64_t N,
                       int64_t C) {
    kernels::cuda::rmsnorm_forward(out, rstd, inp, w, N, C, compute_);
  }
  void rmsnorm_backward(bf16* dinp, float* dw, const bf16* dout, const bf16* inp,
                        const bf16* w, const float* rstd, int64_t N, int64_t C) {
    kernels::cuda::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C, compute_);
  }
  void attention_forward(bf16* out, bf16* att, const bf16* qkv, int64_t B, int64_t T, int64_t C,
                         int64_t NH, int64_t KVH) {
    kernels::cuda::attention_forward(*blas_, out, att, qkv, attention_ws_.data(), B, T, C, NH, KVH);
  }
  void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* att,
                          int64_t B, int64_t T, int64_t C, int64_t NH, int64_t KVH) {
    kernels::cuda::attention_backward(*blas_, dqkv, dout, qkv, att, attention_ws_.data(), B, T, C,
                                      NH, KVH);
  }
  void rope_forward(bf16* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                    const float* inv_freq, int64_t row0, int64_t T) {
    kernels::cuda::rope_forward(x, rows, row_stride, heads, head_dim, inv_freq, row0, T, compute_);
  }
  void rope_backward(bf16* dx, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                     const float* inv_freq, int64_t row0, int64_t T) {
    kernels::cuda::rope_backward(dx, rows, row_stride, heads, head_dim, inv_freq, row0, T, compute_);
  }
  void gelu_forward(bf16* out, const bf16* inp, int64_t n) {
    kernels::cuda::gelu_forward(out, inp, n, compute_);
  }
  void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t n) {
    kernels::cuda::gelu_backward(dinp, inp, dout, n, compute_);
  }
  void swiglu_forward(bf16* out, const bf16* inp, int64_t N, int64_t F) {
    kernels::cuda::swiglu_forward(out, inp, N, F, compute_);
  }
  void swiglu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int64_t N, int64_t F) {
    kernels::cuda::swiglu_backward(dinp, inp, dout, N, F, compute_);
  }
  void embedding_forward(bf16* out, const int32_t* tokens, const bf16* wte, int64_t vstart,
                         int64_t vrows, int64_t N, int64_t C) {
    kernels::cuda::embedding_forward(out, tokens, wte, vstart, vrows, N, C, compute_);
  }
  void embedding_backward(float* dwte, const bf16* dout, const int32_t* tokens, int64_t vstart,
                          int64_t vrows, int64_t N, int64_t C) {
    kernels::cuda::embedding_backward(dwte, dout, tokens, vstart, vrows, N, C, compute_);
  }
  void position_forward_rows(bf16* out, const bf16* wpe, int64_t row0, int64_t rows, int64_t T,
                             int64_t C) {
    kernels::cuda::position_forward_rows(out, wpe, row0, rows, T, C, compute_);
  }
  void position_backward_rows(float* dwpe, const bf16* dout, int64_t row0, int64_t rows,
                              int64_t T, int64_t C) {
    kernels::cuda::position_backward_rows(dwpe, dout, row0, rows, T, C, compute_);
  }
  void crossentropy_local_max(float* maxes, const bf16* logits, int64_t N, int64_t V,
                              int64_t valid) {
    kernels::cuda::crossentropy_local_max(maxes, logits, N, V, valid, compute_);
  }
  void crossentropy_local_sums(float* sums, float* target, const bf16* logits, const float* maxes,
                               const int32_t* targets, int64_t vstart, int64_t N, int64_t V,
                               int64_t valid) {
    kernels::cuda::crossentropy_local_sums(sums, target, logits, maxes, targets, vstart, N, V,
                                           valid, compute_);
  }
  void crossentropy_finish(float* losses, bf16* logits, const float* maxes, const float* sums,
                           const float* target, const int32_t* targets, int64_t vstart,
                           float dloss, int64_t N, int64_t V, int64_t valid) {
    kernels::cuda::crossentropy_finish(losses, logits, maxes, sums, target, targets, vstart, dloss,
                                       N, V, valid, compute_);
  }
  void add_loss(double* acc, const float* losses, int64_t N, float dloss) {
    kernels::cuda::loss_add(acc, losses, N, dloss, compute_);
  }

  void tied_sum(float* a, float* b, int64_t n) { kernels::cuda::tied_sum(a, b, n, compute_); }
  double* scalar(int i) { return scalars_.data() + i; }
  void zero_scalar(double* s) { zero(s, 1); }
  double read_scalar(const double* s) const;  // after finish_step
  void sum_squares_add(double* acc, const float* x, int64_t n) {
    kernels::cuda::sum_squares_add(acc, x, n, compute_);
  }
  void clip(float* x, int64_t n, const double* norm_sq, float clip) {
    kernels::cuda::clip_scale(x, n, norm_sq, clip, compute_);
  }

  struct Params {
    Buffer<bf16> params;  // (padded) the working copy
    Buffer<float> grads;  // (padded)
    Buffer<float> master, m, v;  // own shard
    bf16* working() { return params.data(); }
  };
  Params make_params(int64_t padded, int64_t shard) const {
    return {alloc<bf16>(padded), alloc<float>(padded), alloc<float>(shard), alloc<float>(shard),
            alloc<float>(shard)};
  }
  void adamw(Params& P, int64_t a, int64_t b, int64_t shard_begin, const kernels::AdamW& h,
             int64_t step, bool decay) {
    const int64_t s = a - shard_begin;
    kernels::cuda::adamw_update(P.master.data() + s, P.params.data() + a, P.grads.data() + a,
                                P.m.data() + s, P.v.data() + s, b - a, h, step, decay, compute_);
  }
  // Host <-> device, outside the step (checkpoints, initialisation) or for the test-only dump.
  // The gradient buffer serves as fp32 staging for the first three (it is zeroed at the start
  // of every step).
  void push_params(Params& P, const std::vector<float>& host, int64_t shard_begin, int64_t shard_end);
  void pull_params(Params& P, std::vector<float>& host, int64_t shard_begin, int64_t shard_end,
                   bool zero1, CudaComm& comm, const Group& dp);
  void gather_state(Params& P, std::vector<float>& m_full, std::vector<float>& v_full,
                    int64_t padded, int64_t shard_begin, bool zero1, CudaComm& comm,
                    const Group& dp);
  void scatter_state(Params& P, const std::vector<float>& m_full, const std::vector<float>& v_full,
                     int64_t shard_begin, int64_t shard_end);
  void download(std::vector<float>& host, const float* dev, int64_t n);
  void download_as_float(std::vector<float>& host, const bf16* dev, size_t n);
  nlohmann::json params_bytes_json(const Params& P) const;
  nlohmann::json memory_json() const;

 private:
  Recorder& rec_;
  int device_ = 0;
  cudaStream_t compute_ = nullptr;
  std::unique_ptr<kernels::cuda::Blas> blas_;
  EventTimer timer_;
  std::shared_ptr<DeviceBytes> device_bytes_ = std::make_shared<DeviceBytes>();
  size_t attention_bytes_ = 0;
  DeviceBuffer<char> attention_ws_;
  DeviceBuffer<double> scalars_;
  std::vector<std::pair<cudaStream_t, cudaEvent_t>> tails_;  // per stream: its "done so far" event
};

// Collectives and pipeline p2p over NCCL, with the MPI Comm's interface. Communicators: world,
// tp, dp and embedding from the MPI groups (first rank's ncclGetUniqueId, MPI_Bcast,
// ncclCommInitRank), and one two-rank "channel" per (sender, direction) of the pipeline, each
// with its own stream on both ends. NCCL matches a sender's messages to a receiver in order,
// and operations on one communicator run one after another: with a channel per direction and
// peer, a pending send never delays a receive or a send in the other direction (which a single
// pipeline communicator would: rank p's send to p+1 and p+1's send to p would each wait for the
// other's receive), and each channel's messages are sent and received in the same order (the
// forward and the backward sequence of (micro-batch, chunk) is the same on every pipeline rank
// of core's schedule tables).
class CudaComm {
 public:
  CudaComm(CudaBackend& be, const ProcessGroups& g, const PlanSpec& p);
  ~CudaComm();
  CudaComm(const CudaComm&) = delete;
  CudaComm& operator=(const CudaComm&) = delete;

  void all_reduce_sum(bf16* x, int64_t n, const Group& g, Stream s, const std::string& what);
  void all_reduce_sum(float* x, int64_t n, const Group& g, Stream s, const std::string& what);
  void all_reduce_max(float* x, int64_t n, const Group& g, Stream s, const std::string& what);
  void reduce_scatter_sum(bf16* x, int64_t block, const Group& g, const std::string& what,
                          Stream s = Stream::dp);
  void reduce_scatter_sum(float* x, int64_t block, const Group& g, const std::string& what,
                          Stream s = Stream::dp);
  void all_gather(bf16* x, int64_t block, const Group& g, const std::string& what,
                  Stream s = Stream::dp);
  void all_gather(float* x, int64_t block, const Group& g, const std::string& what,
                  Stream s = Stream::dp);
  void all_reduce_scalar(double* x, const Group& g);
  void send(const bf16* x, int64_t n, int dest, int tag, const Group& g, const std::string& what,
            P2PDir dir, CudaBackend::StashSync* sync);
  // The receive waits first for the stash's last send in the same direction (the buffer).
  void recv(bf16* x, int64_t n, int src, int tag, const Group& g, const std::string& what,
            P2PDir dir, const CudaBackend::StashSync* sync);
  void wait_sends();

 private:
  struct Channel {
    NcclComm comm;
    cudaStream_t stream = nullptr;
    int peer_pp = -1;  // the other end's pipeline rank
    bool sender = false;
    P2PDir dir = P2PDir::forward;
  };
  template <class F>
  void collective(const Group& g, Stream s, const std::string& what, double bytes, int64_t elems,
                  const char* kind, F call);
  // The bf16 and fp32 overloads above, written once.
  template <class T>
  void all_reduce_sum_of(T* x, int64_t n, const Group& g, Stream s, const std::string& what);
  template <class T>
  void reduce_scatter_sum_of(T* x, int64_t block, const Group& g, const std::string& what, Stream s);
  template <class T>
  void all_gather_of(T* x, int64_t block, const Group& g, const std::string& what, Stream s);
  ncclComm_t comm_of(const Group& g) const;
  cudaStream_t stream_of(Stream s) const;
  void warm_up();
  Channel& channel(bool sender, P2PDir dir, int peer);

  CudaBackend& be_;
  NcclComm world_, tp_, dp_, embedding_;
  cudaStream_t tp_stream_ = nullptr, dp_stream_ = nullptr;
  std::vector<std::unique_ptr<Channel>> channels_;
};

}  // namespace parallax::exec
