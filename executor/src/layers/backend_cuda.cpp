#include "backend_cuda.hpp"

#include "parallax/kernels/cuda/device.hpp"

#include <algorithm>
#include <stdexcept>

namespace parallax::exec {

namespace cu = kernels::cuda;

void* device_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  PX_CUDA(cudaMalloc(&p, bytes));
  // The memset runs on the legacy default stream, which the backend's non-blocking streams do
  // not wait for: finish it here (allocation happens when the trainer is built, not in a step).
  PX_CUDA(cudaMemset(p, 0, bytes));
  PX_CUDA(cudaStreamSynchronize(nullptr));
  return p;
}

void device_free(void* p) {
  if (!p) return;
  cudaFree(p);  // destructors do not throw
}

// ---- EventTimer ----

EventTimer::~EventTimer() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

int EventTimer::record(cudaStream_t s) {
  if (next_ == events_.size()) {  // the pool grows during the first step only
    cudaEvent_t e = nullptr;
    PX_CUDA(cudaEventCreate(&e));
    events_.push_back(e);
  }
  PX_CUDA(cudaEventRecord(events_[next_], s));
  return static_cast<int>(next_++);
}

void EventTimer::begin(cudaStream_t compute, double host_now) {
  next_ = 0;
  ops_.clear();
  in_step_ = true;
  origin_ = record(compute);
  origin_host_ = host_now;
}

void EventTimer::add(const std::string& name, Stream stream, double flops, double bytes,
                     const std::string& shape, const std::string& group, int e0, int e1) {
  if (!in_step_) return;  // checkpoint-time transfers are not part of a step
  Op op;
  op.name = name;
  op.stream = stream;
  op.flops = flops;
  op.bytes = bytes;
  op.shape = shape;
  op.group = group;
  op.e0 = e0;
  op.e1 = e1;
  ops_.push_back(std::move(op));
}

void EventTimer::add_span(const std::string& name, int e0, int e1, int64_t micro_batch,
                          int64_t chunk) {
  if (!in_step_) return;
  Op op;
  op.name = name;
  op.e0 = e0;
  op.e1 = e1;
  op.micro_batch = micro_batch;
  op.chunk = chunk;
  op.span = true;
  ops_.push_back(std::move(op));
}

void EventTimer::resolve(Recorder& rec) {
  auto at = [&](int e) {
    float ms = 0;
    PX_CUDA(cudaEventElapsedTime(&ms, events_[static_cast<size_t>(origin_)], events_[static_cast<size_t>(e)]));
    return origin_host_ + static_cast<double>(ms) * 1e-3;
  };
  for (const Op& op : ops_) {
    if (op.span)
      rec.span(op.name, at(op.e0), at(op.e1), op.micro_batch, op.chunk);
    else
      rec.add(op.name, op.stream, at(op.e0), at(op.e1), op.flops, op.bytes, op.shape, op.group);
  }
  ops_.clear();
  in_step_ = false;
}

// ---- CudaBackend ----

CudaBackend::StashSync::StashSync() {
  PX_CUDA(cudaEventCreateWithFlags(&forward_sent, cudaEventDisableTiming));
  PX_CUDA(cudaEventCreateWithFlags(&backward_sent, cudaEventDisableTiming));
}

CudaBackend::StashSync::~StashSync() {
  cudaEventDestroy(forward_sent);
  cudaEventDestroy(backward_sent);
}

CudaBackend::CudaBackend(Recorder& rec, int device) : rec_(rec), device_(device) {
  cu::keep_stream_ordered_pool(device);
  PX_CUDA(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  blas_ = std::make_unique<cu::Blas>(compute_);
  scalars_ = alloc<double>(2);
}

CudaBackend::~CudaBackend() {
  blas_.reset();
  for (auto& [s, e] : tails_) cudaEventDestroy(e);
  cudaStreamDestroy(compute_);
}

void CudaBackend::order(cudaStream_t after, cudaStream_t before) {
  auto it = std::find_if(tails_.begin(), tails_.end(), [&](const auto& t) { return t.first == before; });
  if (it == tails_.end()) {
    cudaEvent_t e = nullptr;
    PX_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    tails_.emplace_back(before, e);
    it = tails_.end() - 1;
  }
  // cudaStreamWaitEvent waits for the record made just before it; re-recording the same event
  // later does not change what an earlier wait waits for.
  PX_CUDA(cudaEventRecord(it->second, before));
  PX_CUDA(cudaStreamWaitEvent(after, it->second, 0));
}

void CudaBackend::reserve_attention(int64_t B, int64_t T, int64_t NH) {
  const size_t bytes = cu::attention_workspace_bytes(B, T, NH);
  if (bytes <= attention_bytes_) return;
  attention_ws_ = alloc<char>(static_cast<int64_t>(bytes));  // at construction only
  attention_bytes_ = bytes;
}

double CudaBackend::begin_step() {
  const double now = rec_.now_s();
  timer_.begin(compute_, now);
  return now;
}

double CudaBackend::finish_step() {
  // The one host wait of a step: every other stream's work was joined into compute.
  PX_CUDA(cudaStreamSynchronize(compute_));
  const double now = rec_.now_s();
  timer_.resolve(rec_);
  return now;
}

void CudaBackend::wait_sent(StashSync& s, P2PDir dir) {
  PX_CUDA(cudaStreamWaitEvent(compute_, dir == P2PDir::forward ? s.forward_sent : s.backward_sent, 0));
}

double CudaBackend::read_scalar(const double* s) const {
  double x = 0;
  PX_CUDA(cudaMemcpy(&x, s, sizeof(double), cudaMemcpyDeviceToHost));
  return x;
}

void CudaBackend::push_params(Params& P, const std::vector<float>& host, int64_t shard_begin,
                              int64_t shard_end) {
  // Copies on the compute stream (ordered with the cast below), then one wait: this runs when
  // the trainer is built and after a checkpoint is loaded, never inside a step.
  const auto n = static_cast<int64_t>(P.grads.size());
  upload(P.grads.data(), host.data(), n);
  if (shard_end > shard_begin) upload(P.master.data(), host.data() + shard_begin, shard_end - shard_begin);
  cu::cast_to_bf16(P.params.data(), P.grads.data(), n, compute_);
  zero(P.grads.data(), n);
  PX_CUDA(cudaStreamSynchronize(compute_));
}

void CudaBackend::pull_params(Params& P, std::vector<float>& host, int64_t shard_begin,
                              int64_t shard_end, bool zero1, CudaComm& comm, const Group& dp) {
  const auto n = static_cast<int64_t>(P.grads.size());
  zero(P.grads.data(), n);
  copy(P.grads.data() + shard_begin, P.master.data(), shard_end - shard_begin);
  if (zero1) comm.all_gather(P.grads.data(), n / dp.size, dp, "dp_all_gather_master");
  download(host, P.grads.data(), n);
}

void CudaBackend::gather_state(Params& P, std::vector<float>& m_full, std::vector<float>& v_full,
                               int64_t padded, int64_t shard_begin, bool zero1, CudaComm& comm,
                               const Group& dp) {
  for (int k = 0; k < 2; ++k) {
    const Buffer<float>& state = k == 0 ? P.m : P.v;
    zero(P.grads.data(), padded);
    copy(P.grads.data() + shard_begin, state.data(), static_cast<int64_t>(state.size()));
    if (zero1) comm.all_gather(P.grads.data(), padded / dp.size, dp, "dp_all_gather_adam_state");
    download(k == 0 ? m_full : v_full, P.grads.data(), padded);
  }
}

void CudaBackend::scatter_state(Params& P, const std::vector<float>& m_full,
                                const std::vector<float>& v_full, int64_t shard_begin,
                                int64_t shard_end) {
  if (shard_end <= shard_begin) return;
  upload(P.m.data(), m_full.data() + shard_begin, shard_end - shard_begin);
  upload(P.v.data(), v_full.data() + shard_begin, shard_end - shard_begin);
  PX_CUDA(cudaStreamSynchronize(compute_));  // the host vectors may go away after this
}

void CudaBackend::download(std::vector<float>& host, const float* dev, int64_t n) {
  PX_CUDA(cudaStreamSynchronize(compute_));
  host.resize(static_cast<size_t>(n));
  PX_CUDA(cudaMemcpy(host.data(), dev, sizeof(float) * static_cast<size_t>(n), cudaMemcpyDeviceToHost));
}

void CudaBackend::download_as_float(std::vector<float>& host, const bf16* dev, size_t n) {
  PX_CUDA(cudaStreamSynchronize(compute_));
  std::vector<bf16> raw(n);
  PX_CUDA(cudaMemcpy(raw.data(), dev, sizeof(bf16) * n, cudaMemcpyDeviceToHost));
  host.resize(n);
  for (size_t i = 0; i < n; ++i) host[i] = kernels::to_float(raw[i]);
}

nlohmann::json CudaBackend::params_bytes_json(const Params& P) const {
  auto bytes = [](const auto& b, double each) { return each * static_cast<double>(b.size()); };
  return {{"params_bf16", bytes(P.params, 2)}, {"grads", bytes(P.grads, 4)},
          {"master_fp32", bytes(P.master, 4)}, {"adam_m", bytes(P.m, 4)},
          {"adam_v", bytes(P.v, 4)}};
}

nlohmann::json CudaBackend::memory_json() const {
  size_t free_b = 0, total_b = 0;
  PX_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return {{"device_index", device_},
          {"device", cu::device_description(device_)},
          {"allocated_bytes", static_cast<double>(device_bytes_->allocated)},
          {"attention_workspace_bytes", static_cast<double>(attention_bytes_)},
          {"used_bytes_at_end", static_cast<double>(total_b - free_b)},
          {"total_bytes", static_cast<double>(total_b)}};
}

// ---- CudaComm ----

namespace {

ncclDataType_t nccl_type(const bf16*) { return ncclBfloat16; }
ncclDataType_t nccl_type(const float*) { return ncclFloat; }

// "<collective> elements=N", as the CPU backend's "<collective> floats=N": the kind travels with
// the record (a call site's name stays the same when sequence parallelism changes the collective).
std::string elems_shape(const char* kind, int64_t n) {
  return std::string(kind) + " elements=" + std::to_string(n);
}

}  // namespace

CudaComm::CudaComm(CudaBackend& be, const ProcessGroups& g, const PlanSpec& p) : be_(be) {
  PX_CUDA(cudaStreamCreateWithFlags(&tp_stream_, cudaStreamNonBlocking));
  PX_CUDA(cudaStreamCreateWithFlags(&dp_stream_, cudaStreamNonBlocking));
  // Every rank creates its communicators in the same global order (each creation blocks until
  // its members have joined): world, tp, dp, the pipeline channels, embedding.
  world_ = NcclComm(g.world.comm);
  if (g.tp.size > 1) tp_ = NcclComm(g.tp.comm);
  if (g.dp.size > 1) dp_ = NcclComm(g.dp.comm);
  const int P = g.pp.size, me = g.pp.rank;
  const bool ring = p.vpp > 1 && P > 1;  // interleaved: the last stage's rank sends on to rank 0
  for (int sender = 0; sender < P; ++sender)
    for (P2PDir dir : {P2PDir::forward, P2PDir::backward}) {
      const bool fwd = dir == P2PDir::forward;
      const bool needed = fwd ? (sender + 1 < P || ring) : (sender > 0 || ring);
      if (!needed) continue;
      const int receiver = fwd ? (sender + 1) % P : (sender - 1 + P) % P;
      const bool member = me == sender || me == receiver;
      MPI_Comm pair = MPI_COMM_NULL;  // collective over the pipeline group, in this order
      MPI_Comm_split(g.pp.comm, member ? 0 : MPI_UNDEFINED, me == sender ? 0 : 1, &pair);
      if (!member) continue;
      auto c = std::make_unique<Channel>();
      c->comm = NcclComm(pair);  // sender is rank 0, receiver rank 1
      MPI_Comm_free(&pair);
      PX_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
      c->sender = me == sender;
      c->peer_pp = c->sender ? receiver : sender;
      c->dir = dir;
      channels_.push_back(std::move(c));
    }
  if (g.embedding.comm != MPI_COMM_NULL && g.embedding.size > 1) embedding_ = NcclComm(g.embedding.comm);
  warm_up();
}

// NCCL connects lazily: a communicator's first collective, and a pair's first send/receive,
// block until the peers arrive and set up their transport. Inside a step that wait would sit on
// one stream while the schedule's other streams spin on sends to this rank, so every
// communicator and pipeline channel does one tiny exchange here, in the order they were made
// (every rank's channels are a subsequence of one global order, so the waits cannot cycle).
void CudaComm::warm_up() {
  float* x = nullptr;
  PX_CUDA(cudaMalloc(&x, sizeof(float)));
  PX_CUDA(cudaMemset(x, 0, sizeof(float)));
  auto all_reduce = [&](const NcclComm& c) {
    if (!c) return;
    PX_NCCL(ncclAllReduce(x, x, 1, ncclFloat, ncclSum, c.get(), tp_stream_));
    PX_CUDA(cudaStreamSynchronize(tp_stream_));
  };
  all_reduce(world_);
  all_reduce(tp_);
  all_reduce(dp_);
  for (const auto& c : channels_) {
    if (c->sender) PX_NCCL(ncclSend(x, 1, ncclFloat, 1, c->comm.get(), c->stream));
    else PX_NCCL(ncclRecv(x, 1, ncclFloat, 0, c->comm.get(), c->stream));
    PX_CUDA(cudaStreamSynchronize(c->stream));
  }
  all_reduce(embedding_);
  PX_CUDA(cudaFree(x));
}

CudaComm::~CudaComm() {
  for (auto& c : channels_) {
    c->comm = NcclComm();
    cudaStreamDestroy(c->stream);
  }
  cudaStreamDestroy(tp_stream_);
  cudaStreamDestroy(dp_stream_);
}

ncclComm_t CudaComm::comm_of(const Group& g) const {
  const NcclComm* c = g.name == "tp" ? &tp_ : g.name == "dp" ? &dp_ : g.name == "world" ? &world_
                          : g.name == "embedding" ? &embedding_ : nullptr;
  if (!c || !*c) throw std::logic_error("CudaComm: no NCCL communicator for group " + g.name);
  return c->get();
}

cudaStream_t CudaComm::stream_of(Stream s) const { return s == Stream::tp ? tp_stream_ : dp_stream_; }

template <class F>
void CudaComm::collective(const Group& g, Stream s, const std::string& what, double bytes,
                          int64_t elems, const char* kind, F call) {
  const ncclComm_t comm = comm_of(g);
  const cudaStream_t cs = stream_of(s);
  be_.order(cs, be_.compute());  // the input is ready
  const int e0 = be_.timer().record(cs);
  call(comm, cs);
  const int e1 = be_.timer().record(cs);
  be_.timer().add(what, s, 0, bytes, elems_shape(kind, elems), g.name, e0, e1);
  be_.order(be_.compute(), cs);  // the output is used next
}

template <class T>
void CudaComm::all_reduce_sum_of(T* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  if (g.size <= 1 || n == 0) return;
  collective(g, s, what, static_cast<double>(sizeof(T)) * static_cast<double>(n), n, "all_reduce",
             [&](ncclComm_t c, cudaStream_t cs) {
               PX_NCCL(ncclAllReduce(x, x, static_cast<size_t>(n), nccl_type(x), ncclSum, c, cs));
             });
}

void CudaComm::all_reduce_sum(bf16* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  all_reduce_sum_of(x, n, g, s, what);
}

void CudaComm::all_reduce_sum(float* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  all_reduce_sum_of(x, n, g, s, what);
}

void CudaComm::all_reduce_max(float* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  if (g.size <= 1 || n == 0) return;
  collective(g, s, what, 4.0 * static_cast<double>(n),
             n, "all_reduce", [&](ncclComm_t c, cudaStream_t cs) {
    PX_NCCL(ncclAllReduce(x, x, static_cast<size_t>(n), ncclFloat, ncclMax, c, cs));
  });
}

// In place: rank r's block of the input is where its result lands (NCCL's in-place rule).
template <class T>
void CudaComm::reduce_scatter_sum_of(T* x, int64_t block, const Group& g, const std::string& what,
                                     Stream s) {
  if (g.size <= 1) return;
  const int64_t n = block * g.size;
  collective(g, s, what, static_cast<double>(sizeof(T)) * static_cast<double>(n), n, "reduce_scatter",
             [&](ncclComm_t c, cudaStream_t cs) {
               PX_NCCL(ncclReduceScatter(x, x + g.rank * block, static_cast<size_t>(block),
                                         nccl_type(x), ncclSum, c, cs));
             });
}

void CudaComm::reduce_scatter_sum(bf16* x, int64_t block, const Group& g, const std::string& what, Stream s) {
  reduce_scatter_sum_of(x, block, g, what, s);
}

void CudaComm::reduce_scatter_sum(float* x, int64_t block, const Group& g, const std::string& what, Stream s) {
  reduce_scatter_sum_of(x, block, g, what, s);
}

template <class T>
void CudaComm::all_gather_of(T* x, int64_t block, const Group& g, const std::string& what, Stream s) {
  if (g.size <= 1) return;
  const int64_t n = block * g.size;
  collective(g, s, what, static_cast<double>(sizeof(T)) * static_cast<double>(n), n, "all_gather",
             [&](ncclComm_t c, cudaStream_t cs) {
               PX_NCCL(ncclAllGather(x + g.rank * block, x, static_cast<size_t>(block), nccl_type(x), c, cs));
             });
}

void CudaComm::all_gather(bf16* x, int64_t block, const Group& g, const std::string& what, Stream s) {
  all_gather_of(x, block, g, what, s);
}

void CudaComm::all_gather(float* x, int64_t block, const Group& g, const std::string& what, Stream s) {
  all_gather_of(x, block, g, what, s);
}

void CudaComm::all_reduce_scalar(double* x, const Group& g) {
  if (g.size <= 1) return;
  const ncclComm_t comm = comm_of(g);
  be_.order(dp_stream_, be_.compute());
  PX_NCCL(ncclAllReduce(x, x, 1, ncclDouble, ncclSum, comm, dp_stream_));
  be_.order(be_.compute(), dp_stream_);
}

CudaComm::Channel& CudaComm::channel(bool sender, P2PDir dir, int peer) {
  for (auto& c : channels_)
    if (c->sender == sender && c->dir == dir && c->peer_pp == peer) return *c;
  throw std::logic_error("CudaComm: no pipeline channel to/from pipeline rank " + std::to_string(peer));
}

void CudaComm::send(const bf16* x, int64_t n, int dest, int /*tag*/, const Group& g,
                    const std::string& what, P2PDir dir, CudaBackend::StashSync* sync) {
  Channel& c = channel(true, dir, dest);
  be_.order(c.stream, be_.compute());  // the data is ready
  const int e0 = be_.timer().record(c.stream);
  PX_NCCL(ncclSend(x, static_cast<size_t>(n), ncclBfloat16, 1, c.comm.get(), c.stream));
  const int e1 = be_.timer().record(c.stream);
  be_.timer().add(what, Stream::pp_send, 0, 2.0 * static_cast<double>(n), elems_shape("send_recv", n),
                  g.name, e0, e1);
  if (sync)  // the stash's buffer may be overwritten once this has completed
    PX_CUDA(cudaEventRecord(dir == P2PDir::forward ? sync->forward_sent : sync->backward_sent, c.stream));
}

void CudaComm::recv(bf16* x, int64_t n, int src, int /*tag*/, const Group& g,
                    const std::string& what, P2PDir dir, const CudaBackend::StashSync* sync) {
  Channel& c = channel(false, dir, src);
  be_.order(c.stream, be_.compute());  // the buffer is free: its readers were on compute ...
  if (sync)  // ... and its last send from it has completed
    PX_CUDA(cudaStreamWaitEvent(c.stream, dir == P2PDir::forward ? sync->forward_sent : sync->backward_sent, 0));
  const int e0 = be_.timer().record(c.stream);
  PX_NCCL(ncclRecv(x, static_cast<size_t>(n), ncclBfloat16, 0, c.comm.get(), c.stream));
  const int e1 = be_.timer().record(c.stream);
  be_.timer().add(what, Stream::pp_recv, 0, 2.0 * static_cast<double>(n), elems_shape("send_recv", n),
                  g.name, e0, e1);
  be_.order(be_.compute(), c.stream);  // the data is used next
}

void CudaComm::wait_sends() {
  for (auto& c : channels_)
    if (c->sender) be_.order(be_.compute(), c->stream);
}

}  // namespace parallax::exec
