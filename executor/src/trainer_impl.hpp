#pragma once
// The trainer, written once over a backend Be (see chunk_impl.hpp for what Be provides; here
// also Params, make_params, adamw, scalars, clip, tied_sum, upload, begin/finish_step). The
// step is the same list of operations on every backend; a device backend only enqueues them,
// and the host waits once, at the end of the step (finish_step), for the loss, the gradient
// norm and the CUDA-event timings.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "layers/chunk_impl.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/rng.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

template <class Be>
class TrainerImpl : public Trainer {
 public:
  using act = typename Be::act;
  using Chunk = ChunkT<Be>;
  using Stash = StashT<Be>;

  // be and comm are owned by the caller and outlive the trainer.
  TrainerImpl(Be& be, typename Be::Comm& comm, const PlanFile& plan, const TrainOptions& opt,
              const ProcessGroups& groups, TokenSource data);

  StepResult step(const std::function<void()>& after_reduce) override;
  const std::vector<ParamTensor>& tensors() const override { return tensors_; }
  std::vector<float>& params() override { return host_params(); }
  std::vector<float>& grads() override { return host_grads(); }
  void pull_params() override;
  void pull_grads() override;
  void push_params() override;
  int64_t step_count() const override { return step_; }
  void set_step_count(int64_t s) override { step_ = s; }
  void gather_grads() override;
  void gather_optimizer_state(std::vector<float>& m_full, std::vector<float>& v_full) override;
  void scatter_optimizer_state(const std::vector<float>& m_full,
                               const std::vector<float>& v_full) override;
  int64_t numel() const override { return numel_; }
  void capture_logits(bool on) override;
  const std::vector<float>& captured_logits() const override;
  const Dims& last_dims() const override { return chunks_.back()->dims(); }
  nlohmann::json memory_json() const override;
  std::string backend() const override { return Be::kName; }

 private:
  void run_schedule(double* loss_acc);
  void reduce_gradients();
  double* clip_gradients();
  void optimizer_step();
  void load_step_tokens();
  void init_parameters();
  void gather_cp_logits();
  std::vector<float>& host_params();
  std::vector<float>& host_grads();

  Be& be_;
  typename Be::Comm& comm_;
  PlanFile pf_;
  TrainOptions opt_;
  const ProcessGroups& g_;
  TokenSource data_;
  ScheduleTable schedule_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<ParamTensor> tensors_;
  int64_t numel_ = 0, padded_ = 0;
  int64_t expert_begin_ = 0;  // the routed experts' tensors from here to numel_ (ep > 1)
  bool zero1_ = false;
  int64_t shard_begin_ = 0, shard_end_ = 0;
  typename Be::Params P_;
  // Stash pools per chunk, allocated up front (as many as the schedule keeps in flight): free
  // stashes and the one of each in-flight micro-batch.
  std::vector<std::vector<std::unique_ptr<Stash>>> free_;
  std::vector<std::vector<std::unique_ptr<Stash>>> live_;
  // This step's tokens and targets, (m, N) each: generated on the host (page-locked memory on
  // a device backend), uploaded once at the start of the step.
  typename Be::template HostBuffer<int32_t> host_tokens_, host_targets_;
  typename Be::template Buffer<int32_t> tokens_, targets_;
  int64_t step_ = 0;
  bool capture_logits_ = false;
  typename Be::template Buffer<act> logits_;
  // Host copies for a device backend (the CPU backend uses P_ itself).
  std::vector<float> host_params_, host_grads_, host_logits_;
  std::vector<float> cp_logits_;  // context parallelism: every cp rank's logits in sequence order
};

template <class Be>
TrainerImpl<Be>::TrainerImpl(Be& be, typename Be::Comm& comm, const PlanFile& plan,
                             const TrainOptions& opt, const ProcessGroups& groups,
                             TokenSource data)
    : be_(be), comm_(comm), pf_(plan), opt_(opt), g_(groups), data_(std::move(data)) {
  const PlanSpec& p = pf_.plan;
  schedule_ = plan_schedule(p);
  int64_t offset = 0;
  for (int64_t c = 0; c < p.vpp; ++c) {
    const int64_t stage = virtual_stage(p.pp, g_.coords.pp, c);
    chunks_.push_back(std::make_unique<Chunk>(be_, pf_.model, p, stage, g_.coords.tp, g_.coords.cp,
                                              offset, pf_.job.attention == Attention::fused,
                                              g_.ep.rank));
    offset += chunks_.back()->numel();
  }
  numel_ = offset;
  // Expert parallelism: the routed experts' tensors after every other one, so that the dense
  // part reduces over dp x cp and the experts' part over the expert-data-parallel group.
  expert_begin_ = numel_;
  if (p.ep > 1) {
    int64_t dense = 0;
    for (const auto& ch : chunks_)
      for (const auto& t : ch->table()) dense += t.expert ? 0 : t.numel();
    int64_t dense_at = 0, expert_at = dense;
    for (auto& ch : chunks_) ch->relocate(dense_at, expert_at);
    expert_begin_ = dense;
  }
  for (const auto& ch : chunks_)
    for (const auto& t : ch->table()) tensors_.push_back(t);
  zero1_ = p.zero == 1;
  // The parameters' replicas are the dp x cp ranks of g_.dp: they shard ZeRO-1's state.
  const int64_t replicas = g_.dp.size;
  padded_ = (numel_ + replicas - 1) / replicas * replicas;
  if (zero1_) {
    const int64_t s = padded_ / replicas;
    shard_begin_ = g_.dp.rank * s;
    shard_end_ = shard_begin_ + s;
  } else {
    shard_begin_ = 0;
    shard_end_ = numel_;
  }
  P_ = be_.make_params(padded_, shard_end_ - shard_begin_);
  for (auto& ch : chunks_) ch->bind(P_.working(), P_.grads.data());
  init_parameters();
  // Stashes: as many per chunk as the schedule has micro-batches in flight on it.
  free_.resize(chunks_.size());
  live_.resize(chunks_.size());
  for (auto& l : live_) l.resize(static_cast<size_t>(p.num_micro_batches));
  std::vector<int64_t> in_flight(chunks_.size(), 0), most(chunks_.size(), 0);
  for (const ScheduleStep& st : schedule_.ranks[static_cast<size_t>(g_.coords.pp)]) {
    const auto c = static_cast<size_t>(st.chunk);
    in_flight[c] += st.kind == StepKind::forward ? 1 : -1;
    most[c] = std::max(most[c], in_flight[c]);
  }
  for (size_t c = 0; c < chunks_.size(); ++c)
    for (int64_t i = 0; i < most[c]; ++i) free_[c].push_back(chunks_[c]->make_stash());
  const Dims& d = chunks_.front()->dims();
  const int64_t all = p.num_micro_batches * d.N;  // this rank's rows (of Tg / cp per sequence)
  host_tokens_ = be_.template host_alloc<int32_t>(all);
  host_targets_ = be_.template host_alloc<int32_t>(all);
  tokens_ = be_.template alloc<int32_t>(all);
  targets_ = be_.template alloc<int32_t>(all);
}

template <class Be>
std::vector<float>& TrainerImpl<Be>::host_params() {
  if constexpr (Be::kMixed)
    return host_params_;
  else
    return P_.params;
}

template <class Be>
std::vector<float>& TrainerImpl<Be>::host_grads() {
  if constexpr (Be::kMixed)
    return host_grads_;
  else
    return P_.grads;
}

template <class Be>
void TrainerImpl<Be>::init_parameters() {
  std::vector<float>& params = host_params();
  params.resize(static_cast<size_t>(padded_), 0.0f);
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(pf_.model.layers));
  for (const auto& t : tensors_) {
    float* x = params.data() + t.offset;
    const uint64_t stream = opt_.seed ^ hash_name(t.name);
    for (int64_t i = 0; i < t.numel(); ++i) {
      float v = 0.0f;
      switch (t.init) {
        case ParamInit::zeros: v = 0.0f; break;
        case ParamInit::ones: v = 1.0f; break;
        case ParamInit::normal:
        case ParamInit::normal_residual: {
          const double sd = t.init == ParamInit::normal ? 0.02 : residual_std;
          const bool padding = t.valid_rows > 0 && global_row(t, i) >= t.valid_rows;
          v = padding ? 0.0f
                      : static_cast<float>(sd) *
                            normal_at(stream, static_cast<uint64_t>(global_flat_index(t, i)));
          break;
        }
      }
      x[i] = v;
    }
  }
  push_params();
}

template <class Be>
void TrainerImpl<Be>::push_params() {
  if constexpr (Be::kMixed) be_.push_params(P_, host_params_, shard_begin_, shard_end_);
}

template <class Be>
void TrainerImpl<Be>::pull_params() {
  if constexpr (Be::kMixed)
    be_.pull_params(P_, host_params_, shard_begin_, shard_end_, zero1_, comm_, g_.dp);
}

template <class Be>
void TrainerImpl<Be>::pull_grads() {
  if constexpr (Be::kMixed) {
    be_.download(host_grads_, P_.grads.data(), padded_);
    if (capture_logits_ || logits_.size() > 0)
      be_.download_as_float(host_logits_, logits_.data(), logits_.size());
  } else {
    if (pf_.plan.cp > 1 && logits_.size() > 0) gather_cp_logits();
  }
}

// Each cp rank's logits rows into sequence order: (micro-batch, sequence, position) rows of all
// Tg positions, as a run without context parallelism captures them. Collective over g_.cp.
template <class Be>
void TrainerImpl<Be>::gather_cp_logits() {
  if constexpr (Be::kMixed) {
    throw std::logic_error("the " + std::string(Be::kName) +
                           " backend runs no context parallelism");
  } else {
    const PlanSpec& p = pf_.plan;
    const Dims& d = chunks_.back()->dims();
    const int64_t block = static_cast<int64_t>(logits_.size());
    std::vector<float> all(static_cast<size_t>(p.cp * block));
    std::copy(logits_.begin(), logits_.end(), all.begin() + g_.coords.cp * block);
    comm_.all_gather(all.data(), block, g_.cp, "cp_all_gather_logits");
    cp_logits_.assign(all.size(), 0.0f);
    const int64_t sequences = block / (d.T * d.Vl);
    for (int64_t r = 0; r < p.cp; ++r) {
      const std::vector<int64_t> pos = cp_positions(d.Tg, p.cp, r);
      for (int64_t sq = 0; sq < sequences; ++sq)
        for (int64_t t = 0; t < d.T; ++t) {
          const auto src = all.begin() + r * block + (sq * d.T + t) * d.Vl;
          std::copy(src, src + d.Vl,
                    cp_logits_.begin() + (sq * d.Tg + pos[static_cast<size_t>(t)]) * d.Vl);
        }
    }
  }
}

template <class Be>
void TrainerImpl<Be>::capture_logits(bool on) {
  capture_logits_ = on;
  if (on && chunks_.back()->last() && logits_.size() == 0) {
    const Dims& d = chunks_.back()->dims();
    logits_ = be_.template alloc<act>(pf_.plan.num_micro_batches * d.N * d.Vl);
  }
}

template <class Be>
const std::vector<float>& TrainerImpl<Be>::captured_logits() const {
  if constexpr (Be::kMixed)
    return host_logits_;
  else
    return cp_logits_.empty() ? logits_ : cp_logits_;
}

template <class Be>
void TrainerImpl<Be>::load_step_tokens() {
  const PlanSpec& p = pf_.plan;
  const int64_t Tg = pf_.model.seq_len;
  const int64_t T = Tg / p.cp;  // context parallelism: this rank's positions of each sequence
  const int64_t N = p.micro_batch * T;
  const int64_t global_batch = p.micro_batch * p.num_micro_batches * p.dp;
  const std::vector<int64_t> pos = cp_positions(Tg, p.cp, g_.coords.cp);
  std::vector<int32_t> inputs(static_cast<size_t>(Tg)), targets(static_cast<size_t>(Tg));
  for (int64_t mb = 0; mb < p.num_micro_batches; ++mb)
    for (int64_t i = 0; i < p.micro_batch; ++i) {
      const int64_t g = step_ * global_batch + g_.coords.dp * p.num_micro_batches * p.micro_batch +
                        mb * p.micro_batch + i;
      data_.sequence(g, Tg, inputs.data(), targets.data());
      for (int64_t t = 0; t < T; ++t) {
        host_tokens_.data()[mb * N + i * T + t] =
            inputs[static_cast<size_t>(pos[static_cast<size_t>(t)])];
        host_targets_.data()[mb * N + i * T + t] =
            targets[static_cast<size_t>(pos[static_cast<size_t>(t)])];
      }
    }
  be_.upload(tokens_.data(), host_tokens_.data(), static_cast<int64_t>(host_tokens_.size()));
  be_.upload(targets_.data(), host_targets_.data(), static_cast<int64_t>(host_targets_.size()));
}

template <class Be>
void TrainerImpl<Be>::run_schedule(double* loss_acc) {
  const PlanSpec& p = pf_.plan;
  const int64_t stages = p.pp * p.vpp;
  const int64_t M = p.num_micro_batches;
  const Dims& d = chunks_.front()->dims();
  // The mean over every token of the global batch: d.N rows here, of dp x cp ranks' micro-batches.
  const float dloss = 1.0f / static_cast<float>(d.N * p.num_micro_batches * g_.dp.size);
  ExecContextT<Be> ctx{comm_, be_, g_};
  auto tag = [&](int64_t kind, int64_t stage, int64_t mb) {
    return static_cast<int>((kind * stages + stage) * M + mb);
  };
  for (const ScheduleStep& st : schedule_.ranks[static_cast<size_t>(g_.coords.pp)]) {
    const auto c = static_cast<size_t>(st.chunk);
    Chunk& ch = *chunks_[c];
    const int64_t v = ch.stage();
    const auto mb = static_cast<size_t>(st.micro_batch);
    const auto step_start = be_.mark();
    if (st.kind == StepKind::forward) {
      if (free_[c].empty()) throw std::logic_error("executor: stash pool exhausted");
      std::unique_ptr<Stash> s = std::move(free_[c].back());
      free_[c].pop_back();
      // Its forward output is overwritten below: the previous micro-batch's forward send from
      // it must have completed. (Its gradient buffer is waited for at the backward, where it
      // is next written: waiting here for the backward send too would tie this forward to the
      // previous stage's progress, which can wait on this rank; a model test found the cycle
      // in interleaved schedules.)
      be_.wait_sent(s->sync, P2PDir::forward);
      s->tokens = tokens_.data() + st.micro_batch * d.N;
      s->targets = targets_.data() + st.micro_batch * d.N;
      if (!ch.first())
        comm_.recv(s->input, d.Ns * d.C, static_cast<int>((v - 1) % p.pp), tag(0, v, st.micro_batch),
                   g_.pp, "pp_recv_forward", P2PDir::forward, &s->sync);
      ctx.logits_copy = capture_logits_ && ch.last() ? logits_.data() + st.micro_batch * d.N * d.Vl
                                                     : nullptr;
      ctx.loss_acc = ch.last() && g_.coords.tp == 0 ? loss_acc : nullptr;
      ctx.aux_acc = g_.coords.tp == 0 ? loss_acc : nullptr;  // MoE layers' load-balancing losses
      ch.forward(*s, dloss, ctx);
      if (!ch.last())
        comm_.send(s->output(), d.Ns * d.C, static_cast<int>((v + 1) % p.pp),
                   tag(0, v + 1, st.micro_batch), g_.pp, "pp_send_forward", P2PDir::forward, &s->sync);
      live_[c][mb] = std::move(s);
    } else {
      std::unique_ptr<Stash> s = std::move(live_[c][mb]);
      // s->dres is written next (received into, or zeroed by the last chunk): the previous
      // micro-batch's backward send from it must have completed.
      if (!ch.last())
        comm_.recv(s->dres, d.Ns * d.C, static_cast<int>((v + 1) % p.pp), tag(1, v, st.micro_batch),
                   g_.pp, "pp_recv_backward", P2PDir::backward, &s->sync);
      else
        be_.wait_sent(s->sync, P2PDir::backward);
      ch.backward(*s, s->dres, ctx);
      if (!ch.first())
        comm_.send(s->dres, d.Ns * d.C, static_cast<int>((v - 1) % p.pp),
                   tag(1, v - 1, st.micro_batch), g_.pp, "pp_send_backward", P2PDir::backward, &s->sync);
      free_[c].push_back(std::move(s));
    }
    be_.span((st.kind == StepKind::forward ? "F " : "B ") + std::to_string(st.micro_batch),
             step_start, st.micro_batch, st.chunk);
  }
  comm_.wait_sends();
}

template <class Be>
void TrainerImpl<Be>::reduce_gradients() {
  const PlanSpec& p = pf_.plan;
  float* grads = P_.grads.data();
  // Tied word embeddings: the first stage's table and the last stage's copy get the sum.
  std::vector<const ParamTensor*> wte;
  for (const auto& t : tensors_)
    if (t.name == "wte.weight") wte.push_back(&t);
  if (wte.size() == 2) {
    be_.tied_sum(grads + wte[0]->offset, grads + wte[1]->offset, wte[0]->numel());
  } else if (wte.size() == 1 && p.pp > 1 && g_.embedding.comm != MPI_COMM_NULL) {
    comm_.all_reduce_sum(grads + wte[0]->offset, wte[0]->numel(), g_.embedding, Stream::dp,
                         "embedding_all_reduce");
  }
  // Sequence parallelism: each TP rank saw only its rows in the norms, residual biases and
  // positions, so the replicated tensors' gradients are partial sums over TP.
  if (p.sequence_parallel && p.tp > 1)
    for (const auto& t : tensors_)
      if (t.shard_dim < 0)
        comm_.all_reduce_sum(grads + t.offset, t.numel(), g_.tp, Stream::tp,
                             "tp_all_reduce_sp_replicated_grads");
  // Over dp x cp: context-parallel ranks hold partial gradients of the same parameters.
  if (zero1_) {
    comm_.reduce_scatter_sum(grads, padded_ / g_.dp.size, g_.dp, "dp_reduce_scatter_grads");
    return;
  }
  for (int64_t b = 0; b < expert_begin_; b += opt_.dp_bucket_floats)
    comm_.all_reduce_sum(grads + b, std::min(opt_.dp_bucket_floats, expert_begin_ - b), g_.dp,
                         Stream::dp, "dp_all_reduce_bucket");
  // The routed experts (ep > 1): their replicas are the edp ranks; every ep peer's tokens are
  // already in each rank's sum.
  for (int64_t b = expert_begin_; b < numel_; b += opt_.dp_bucket_floats)
    comm_.all_reduce_sum(grads + b, std::min(opt_.dp_bucket_floats, numel_ - b), g_.edp,
                         Stream::dp, "edp_all_reduce_bucket");
}

template <class Be>
double* TrainerImpl<Be>::clip_gradients() {
  // Each element counted once over all ranks: replicated-over-TP tensors on TP rank 0, the tied
  // copy not at all, DP replicas once (ZeRO-1: each rank its own shard; a routed expert's on its
  // first edp rank).
  float* grads = P_.grads.data();
  int64_t lo = 0, hi = numel_;
  if (zero1_) {
    lo = shard_begin_;
    hi = std::min(shard_end_, numel_);
  }
  double* norm_sq = be_.scalar(1);
  be_.zero_scalar(norm_sq);
  for (const auto& t : tensors_) {
    if (t.tied_copy || (t.shard_dim < 0 && g_.coords.tp != 0)) continue;
    if (!zero1_ && (t.expert ? g_.edp.rank : g_.dp.rank) != 0) continue;
    const int64_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel());
    if (a < b) be_.sum_squares_add(norm_sq, grads + a, b - a);
  }
  comm_.all_reduce_scalar(norm_sq, g_.world);
  const int64_t a = zero1_ ? shard_begin_ : 0;
  const int64_t b = zero1_ ? std::min(shard_end_, numel_) : numel_;
  if (a < b) be_.clip(grads + a, b - a, norm_sq, opt_.grad_clip);
  return norm_sq;
}

template <class Be>
void TrainerImpl<Be>::optimizer_step() {
  ++step_;
  be_.time("adamw", 12.0 * static_cast<double>(shard_end_ - shard_begin_),
           std::to_string(shard_end_ - shard_begin_),
           [&] {
             for (const auto& t : tensors_) {
               const int64_t a = std::max(shard_begin_, t.offset);
               const int64_t b = std::min(shard_end_, t.offset + t.numel());
               if (a >= b) continue;
               be_.adamw(P_, a, b, shard_begin_, opt_.adam, step_, t.weight_decay);
             }
           },
           Stream::optimizer);
  if (zero1_) comm_.all_gather(P_.working(), padded_ / g_.dp.size, g_.dp, "dp_all_gather_params");
}

template <class Be>
void TrainerImpl<Be>::gather_grads() {
  if (zero1_) comm_.all_gather(P_.grads.data(), padded_ / g_.dp.size, g_.dp, "dp_all_gather_grads");
}

template <class Be>
void TrainerImpl<Be>::gather_optimizer_state(std::vector<float>& m_full,
                                             std::vector<float>& v_full) {
  if constexpr (Be::kMixed) {
    be_.gather_state(P_, m_full, v_full, padded_, shard_begin_, zero1_, comm_, g_.dp);
  } else {
    m_full.assign(static_cast<size_t>(padded_), 0.0f);
    v_full.assign(static_cast<size_t>(padded_), 0.0f);
    std::copy(P_.m.begin(), P_.m.end(), m_full.begin() + shard_begin_);
    std::copy(P_.v.begin(), P_.v.end(), v_full.begin() + shard_begin_);
    if (zero1_) {
      comm_.all_gather(m_full.data(), padded_ / g_.dp.size, g_.dp, "dp_all_gather_adam_m");
      comm_.all_gather(v_full.data(), padded_ / g_.dp.size, g_.dp, "dp_all_gather_adam_v");
    }
  }
}

template <class Be>
void TrainerImpl<Be>::scatter_optimizer_state(const std::vector<float>& m_full,
                                              const std::vector<float>& v_full) {
  if constexpr (Be::kMixed) {
    be_.scatter_state(P_, m_full, v_full, shard_begin_, shard_end_);
  } else {
    std::copy(m_full.begin() + shard_begin_, m_full.begin() + shard_end_, P_.m.begin());
    std::copy(v_full.begin() + shard_begin_, v_full.begin() + shard_end_, P_.v.begin());
  }
}

template <class Be>
nlohmann::json TrainerImpl<Be>::memory_json() const {
  return {{"flat_bytes", be_.params_bytes_json(P_)}, {"device", be_.memory_json()}};
}

template <class Be>
StepResult TrainerImpl<Be>::step(const std::function<void()>& after_reduce) {
  StepResult r;
  const double t0 = be_.begin_step();
  load_step_tokens();
  be_.zero(P_.grads.data(), static_cast<int64_t>(P_.grads.size()));
  double* loss = be_.scalar(0);
  be_.zero_scalar(loss);
  run_schedule(loss);
  reduce_gradients();
  if (after_reduce) after_reduce();
  const double* norm_sq = clip_gradients();
  optimizer_step();
  comm_.all_reduce_scalar(loss, g_.world);
  r.time_s = be_.finish_step() - t0;
  r.loss = be_.read_scalar(loss);
  r.grad_norm = std::sqrt(be_.read_scalar(norm_sq));
  return r;
}

}  // namespace parallax::exec
