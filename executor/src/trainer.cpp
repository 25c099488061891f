#include "parallax/executor/trainer.hpp"

#include <algorithm>
#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/executor/rng.hpp"
#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

Trainer::Trainer(const PlanFile& plan, const TrainOptions& opt, const ProcessGroups& groups,
                 Comm& comm, Recorder& rec, TokenSource data)
    : pf_(plan), opt_(opt), g_(groups), comm_(comm), rec_(rec), data_(std::move(data)) {
  const PlanSpec& p = pf_.plan;
  schedule_ = plan_schedule(p);
  int64_t offset = 0;
  for (int64_t c = 0; c < p.vpp; ++c) {
    const int64_t stage = virtual_stage(p.pp, g_.coords.pp, c);
    chunks_.push_back(std::make_unique<Chunk>(pf_.model, p, stage, g_.coords.tp, offset));
    offset += chunks_.back()->numel();
    for (const auto& t : chunks_.back()->table()) tensors_.push_back(t);
  }
  numel_ = offset;
  zero1_ = p.zero == 1;
  padded_ = (numel_ + p.dp - 1) / p.dp * p.dp;
  params_.assign(static_cast<size_t>(padded_), 0.0f);
  grads_.assign(static_cast<size_t>(padded_), 0.0f);
  if (zero1_) {
    const int64_t s = padded_ / p.dp;
    shard_begin_ = g_.coords.dp * s;
    shard_end_ = shard_begin_ + s;
  } else {
    shard_begin_ = 0;
    shard_end_ = numel_;
  }
  m_.assign(static_cast<size_t>(shard_end_ - shard_begin_), 0.0f);
  v_.assign(static_cast<size_t>(shard_end_ - shard_begin_), 0.0f);
  for (auto& ch : chunks_) ch->bind(params_.data(), grads_.data());
  init_parameters();
  free_.resize(chunks_.size());
  live_.resize(chunks_.size());
  for (auto& l : live_) l.resize(static_cast<size_t>(p.num_micro_batches));
  const Dims& d = chunks_.front()->dims();
  dres_.assign(static_cast<size_t>(d.N * d.C), 0.0f);
}

void Trainer::init_parameters() {
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(pf_.model.layers));
  for (const auto& t : tensors_) {
    float* x = params_.data() + t.offset;
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
}

void Trainer::load_micro_batch(Stash& s, int64_t mb) {
  const PlanSpec& p = pf_.plan;
  const int64_t T = pf_.model.seq_len;
  const int64_t global_batch = p.micro_batch * p.num_micro_batches * p.dp;
  for (int64_t i = 0; i < p.micro_batch; ++i) {
    const int64_t g = step_ * global_batch + g_.coords.dp * p.num_micro_batches * p.micro_batch +
                      mb * p.micro_batch + i;
    data_.sequence(g, T, s.tokens.data() + i * T, s.targets.data() + i * T);
  }
}

double Trainer::run_schedule() {
  const PlanSpec& p = pf_.plan;
  const int64_t stages = p.pp * p.vpp;
  const int64_t M = p.num_micro_batches;
  const Dims& d = chunks_.front()->dims();
  const float dloss =
      1.0f / static_cast<float>(d.N * p.num_micro_batches * p.dp);
  ExecContext ctx{comm_, rec_, g_};
  double loss = 0.0;
  auto tag = [&](int64_t kind, int64_t stage, int64_t mb) {
    return static_cast<int>((kind * stages + stage) * M + mb);
  };
  for (const ScheduleStep& st : schedule_.ranks[static_cast<size_t>(g_.coords.pp)]) {
    const size_t c = static_cast<size_t>(st.chunk);
    Chunk& ch = *chunks_[c];
    const int64_t v = ch.stage();
    const size_t mb = static_cast<size_t>(st.micro_batch);
    const double step_start = rec_.now_s();
    if (st.kind == StepKind::forward) {
      std::unique_ptr<Stash> s;
      if (free_[c].empty()) {
        s = ch.make_stash();
      } else {
        s = std::move(free_[c].back());
        free_[c].pop_back();
      }
      load_micro_batch(*s, st.micro_batch);
      if (!ch.first())
        comm_.recv(s->input, d.Ns * d.C, static_cast<int>((v - 1) % p.pp), tag(0, v, st.micro_batch),
                   g_.pp, "pp_recv_forward");
      if (capture_logits_ && ch.last()) {
        logits_.resize(static_cast<size_t>(M * d.N * d.Vl));
        ctx.logits_copy = logits_.data() + st.micro_batch * d.N * d.Vl;
      }
      const double l = ch.forward(*s, dloss, ctx);
      ctx.logits_copy = nullptr;
      if (ch.last() && g_.coords.tp == 0) loss += l;
      if (!ch.last())
        comm_.send(s->output(), d.Ns * d.C, static_cast<int>((v + 1) % p.pp),
                   tag(0, v + 1, st.micro_batch), g_.pp, "pp_send_forward");
      live_[c][mb] = std::move(s);
    } else {
      std::unique_ptr<Stash> s = std::move(live_[c][mb]);
      if (!ch.last())
        comm_.recv(dres_.data(), d.Ns * d.C, static_cast<int>((v + 1) % p.pp),
                   tag(1, v, st.micro_batch), g_.pp, "pp_recv_backward");
      ch.backward(*s, dres_.data(), ctx);
      if (!ch.first())
        comm_.send(dres_.data(), d.Ns * d.C, static_cast<int>((v - 1) % p.pp),
                   tag(1, v - 1, st.micro_batch), g_.pp, "pp_send_backward");
      free_[c].push_back(std::move(s));
    }
    rec_.span((st.kind == StepKind::forward ? "F " : "B ") + std::to_string(st.micro_batch),
              step_start, rec_.now_s(), st.micro_batch, st.chunk);
  }
  comm_.wait_sends();
  return loss;
}

void Trainer::reduce_gradients() {
  const PlanSpec& p = pf_.plan;
  // Tied word embeddings: the first stage's table and the last stage's copy get the sum.
  std::vector<const ParamTensor*> wte;
  for (const auto& t : tensors_)
    if (t.name == "wte.weight") wte.push_back(&t);
  if (wte.size() == 2) {
    float* a = grads_.data() + wte[0]->offset;
    float* b = grads_.data() + wte[1]->offset;
    for (int64_t i = 0; i < wte[0]->numel(); ++i) b[i] = a[i] = a[i] + b[i];
  } else if (wte.size() == 1 && p.pp > 1 && g_.embedding.comm != MPI_COMM_NULL) {
    comm_.all_reduce_sum(grads_.data() + wte[0]->offset, wte[0]->numel(), g_.embedding,
                         Stream::dp, "embedding_all_reduce");
  }
  // Sequence parallelism: each TP rank saw only its rows in the norms, residual biases and
  // positions, so the replicated tensors' gradients are partial sums over TP.
  if (p.sequence_parallel && p.tp > 1)
    for (const auto& t : tensors_)
      if (t.shard_dim < 0)
        comm_.all_reduce_sum(grads_.data() + t.offset, t.numel(), g_.tp, Stream::tp,
                             "tp_all_reduce_sp_replicated_grads");
  if (zero1_) {
    comm_.reduce_scatter_sum(grads_.data(), padded_ / p.dp, g_.dp, "dp_reduce_scatter_grads");
    return;
  }
  for (int64_t b = 0; b < numel_; b += opt_.dp_bucket_floats)
    comm_.all_reduce_sum(grads_.data() + b, std::min(opt_.dp_bucket_floats, numel_ - b), g_.dp,
                         Stream::dp, "dp_all_reduce_bucket");
}

double Trainer::clip_gradients() {
  // Each element counted once over all ranks: replicated-over-TP tensors on TP rank 0, the tied
  // copy not at all, DP replicas once (ZeRO-1: each rank its own shard).
  int64_t lo = 0, hi = 0;
  if (zero1_) {
    lo = shard_begin_;
    hi = std::min(shard_end_, numel_);
  } else if (g_.coords.dp == 0) {
    hi = numel_;
  }
  double local = 0.0;
  for (const auto& t : tensors_) {
    if (t.tied_copy || (t.shard_dim < 0 && g_.coords.tp != 0)) continue;
    const int64_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel());
    if (a < b) local += kernels::sum_squares(grads_.data() + a, b - a);
  }
  const double norm = std::sqrt(comm_.all_reduce_sum_double(local, g_.world));
  if (opt_.grad_clip > 0 && norm > opt_.grad_clip) {
    const float scale = static_cast<float>(opt_.grad_clip / (norm + 1e-6));
    const int64_t a = zero1_ ? shard_begin_ : 0;
    const int64_t b = zero1_ ? std::min(shard_end_, numel_) : numel_;
    if (a < b) kernels::scale_inplace(grads_.data() + a, scale, b - a);
  }
  return norm;
}

void Trainer::optimizer_step() {
  ++step_;
  const double t0 = rec_.now_s();
  for (const auto& t : tensors_) {
    const int64_t a = std::max(shard_begin_, t.offset);
    const int64_t b = std::min(shard_end_, t.offset + t.numel());
    if (a >= b) continue;
    kernels::adamw_update(params_.data() + a, grads_.data() + a, m_.data() + (a - shard_begin_),
                          v_.data() + (a - shard_begin_), b - a, opt_.adam, step_,
                          t.weight_decay);
  }
  rec_.add("adamw", Stream::optimizer, t0, rec_.now_s(),
           12.0 * static_cast<double>(shard_end_ - shard_begin_), 0,
           std::to_string(shard_end_ - shard_begin_));
  if (zero1_) comm_.all_gather(params_.data(), padded_ / pf_.plan.dp, g_.dp, "dp_all_gather_params");
}

void Trainer::gather_grads() {
  if (zero1_) comm_.all_gather(grads_.data(), padded_ / pf_.plan.dp, g_.dp, "dp_all_gather_grads");
}

void Trainer::gather_optimizer_state(std::vector<float>& m_full, std::vector<float>& v_full) {
  m_full.assign(static_cast<size_t>(padded_), 0.0f);
  v_full.assign(static_cast<size_t>(padded_), 0.0f);
  std::copy(m_.begin(), m_.end(), m_full.begin() + shard_begin_);
  std::copy(v_.begin(), v_.end(), v_full.begin() + shard_begin_);
  if (zero1_) {
    comm_.all_gather(m_full.data(), padded_ / pf_.plan.dp, g_.dp, "dp_all_gather_adam_m");
    comm_.all_gather(v_full.data(), padded_ / pf_.plan.dp, g_.dp, "dp_all_gather_adam_v");
  }
}

void Trainer::scatter_optimizer_state(const std::vector<float>& m_full,
                                      const std::vector<float>& v_full) {
  std::copy(m_full.begin() + shard_begin_, m_full.begin() + shard_end_, m_.begin());
  std::copy(v_full.begin() + shard_begin_, v_full.begin() + shard_end_, v_.begin());
}

StepResult Trainer::step(const std::function<void()>& after_reduce) {
  StepResult r;
  const double t0 = rec_.now_s();
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  const double local_loss = run_schedule();
  reduce_gradients();
  if (after_reduce) after_reduce();
  r.grad_norm = clip_gradients();
  optimizer_step();
  r.loss = comm_.all_reduce_sum_double(local_loss, g_.world);
  r.time_s = rec_.now_s() - t0;
  return r;
}

}  // namespace parallax::exec
