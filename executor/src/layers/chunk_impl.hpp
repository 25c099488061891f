#pragma once
// The chunk, written once over a backend Be (backend_cpu.hpp, backend_cuda.hpp). Be provides:
//   act, wt                 element types of activations (and their gradients) and of weights
//   Buffer<T>, alloc<T>(n)  owning zero-filled buffers (host vectors / device memory)
//   Comm                    collectives and p2p on act/float buffers (MPI / NCCL)
//   StashSync               what a stash needs to be reused safely (nothing / send events)
//   time(name, flops, shape, f)  runs f and times it (wall clock / CUDA events)
//   zero, copy and every op of kernels/cpu.hpp with the same shapes
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe_layer.hpp"
#include "parallax/executor/layers/chunk.hpp"
#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

template <class Be>
struct StashT {
  using act = typename Be::act;
  typename Be::template Buffer<act> data;      // activations
  typename Be::template Buffer<float> stats;   // norm statistics, losses
  const int32_t* tokens = nullptr;             // (N) this micro-batch's inputs (device side)
  const int32_t* targets = nullptr;            // (N)
  act* input = nullptr;                        // (Ns, C)
  std::vector<LayerActsT<act>> layers;         // pointers of recomputed parts are null
  std::vector<bool> recomputed;                // per layer: full recompute
  act* lnf = nullptr;                          // last chunk
  float *lnf_mean = nullptr, *lnf_rstd = nullptr;
  act* logits = nullptr;                       // (N, Vl); overwritten by dlogits
  float *losses = nullptr, *ce = nullptr;      // (N), (3N)
  act* dres = nullptr;  // (Ns, C): gradient of the chunk output, then of its input (p2p buffer)
  typename Be::StashSync sync;
  act* output() const { return layers.back().out; }
};

template <class Be>
struct ExecContextT {
  typename Be::Comm& comm;
  Be& be;
  const ProcessGroups& groups;
  typename Be::act* logits_copy = nullptr;  // when set, the last chunk copies its logits here
  double* loss_acc = nullptr;  // when set, the last chunk adds its micro-batch loss * dloss
  double* aux_acc = nullptr;   // when set, MoE layers add their weighted load-balancing losses
};

// Whether a backend runs mixture-of-experts layers (MoeLayer: the CPU backend's, kMoe); the
// others' chunks are never built for an MoE model (run.cpp refuses it first).
template <class Be>
constexpr bool backend_runs_moe() {
  if constexpr (requires { Be::kMoe; })
    return Be::kMoe;
  else
    return false;
}

template <class Be>
class ChunkT {
 public:
  using act = typename Be::act;
  using wt = typename Be::wt;
  using Stash = StashT<Be>;
  using Ctx = ExecContextT<Be>;

  // flash_attention: the blocked kernel (a backend with kFlashAttention only). ep_rank: the
  // experts this rank holds (expert parallelism, ProcessGroups::ep).
  ChunkT(Be& be, const ModelSpec& m, const PlanSpec& p, int64_t stage, int64_t tp_rank,
         int64_t cp_rank, int64_t offset, bool flash_attention, int64_t ep_rank = 0);

  const std::vector<ParamTensor>& table() const { return table_; }
  // Moves the chunk's tensors in the flat allocation (before bind): the routed experts' to
  // expert_at onwards, the others to dense_at onwards; both advance.
  void relocate(int64_t& dense_at, int64_t& expert_at) {
    for (auto& t : table_) {
      int64_t& at = t.expert ? expert_at : dense_at;
      t.offset = at;
      at += t.numel();
    }
  }
  int64_t stage() const { return stage_; }
  bool first() const { return first_; }
  bool last() const { return last_; }
  const Dims& dims() const { return d_; }
  int64_t numel() const { return total_numel(table_); }

  void bind(wt* params, float* grads);
  std::unique_ptr<Stash> make_stash() const;

  // Forward of one micro-batch. First chunk: embeds stash.tokens; otherwise stash.input holds
  // the received activations. Last chunk: adds the micro-batch's loss times dloss to
  // x.loss_acc and leaves dlogits in the stash.
  void forward(Stash& s, float dloss, Ctx& x);
  // Backward. Last chunk: from the stash's dlogits; otherwise dres (Ns, C) holds the gradient of
  // the chunk output. Leaves the gradient of the chunk input in dres.
  void backward(Stash& s, act* dres, Ctx& x);

 private:
  using Acts = LayerActsT<act>;
  // aux_acc: where an MoE layer adds its load-balancing loss (null in a recomputation).
  void layer_forward(const LayerWeightsT<wt>& w, const Acts& a, Ctx& x, double* aux_acc);
  void mlp_forward(const LayerWeightsT<wt>& w, const Acts& a, Ctx& x, double* aux_acc);
  // dres: the gradient of the layer's output; leaves dpart (Ns, C), the gradient of ln_2's output.
  const act* mlp_backward(const LayerWeightsT<wt>& w, const LayerWeightsT<float>& g, const Acts& a,
                          const act* dres, Ctx& x);
  void layer_backward(const LayerWeightsT<wt>& w, const LayerWeightsT<float>& g, const Acts& a,
                      act* dres, Ctx& x);
  void gather_rows(act* full, Ctx& x, const char* name);
  act* scatter_rows(act* full, Ctx& x, const char* name);
  const act* gathered_grad(const act* dres, Ctx& x, const char* name);
  void norm_forward(act* out, float* mean, float* rstd, const act* inp, const wt* w, const wt* b,
                    Ctx& x, const char* name);
  void norm_backward(act* dinp, float* dw, float* db, const act* dout, const act* inp,
                     const wt* w, const float* mean, const float* rstd, Ctx& x, const char* name);
  void matmul(act* out, const act* inp, const wt* w, const wt* b, int64_t C, int64_t OC, Ctx& x,
              const char* name);
  void matmul_back(act* dinp, float* dw, float* db, const act* dout, const act* inp, const wt* w,
                   int64_t C, int64_t OC, Ctx& x, const char* name);
  void rope(act* qkv, Ctx& x, bool backward);
  // Calls f(i, n, pos) for each run of rows first + i .. first + i + n - 1 (of this rank's N)
  // whose sequence positions run from pos on: the position of row r is pos + (r - first - i)
  // taken modulo Tg (without context parallelism one run, wrapping at each sequence's end).
  template <class F>
  void position_runs(int64_t first, int64_t rows, F f) const;
  void attention(const Acts& a, Ctx& x);
  void attention_back(const Acts& a, Ctx& x);
  // Context parallelism: every cp rank's keys and values of a.qkv into kv_, (B, Tg, 2 KVH hd) in
  // sequence order; the gradients dkv_ summed over the cp ranks back into dqkv_'s k|v columns.
  void gather_kv(const act* qkv, Ctx& x);
  void scatter_dkv(Ctx& x);
  // kv_ranks_ block r (B, T, 2 KVH hd) <-> rank r's rows of kv (B, Tg, 2 KVH hd).
  void reorder_kv(act* kv, bool to_sequence);
  // The blocked kernel's view of this rank's query rows against the gathered kv_ (a template:
  // instantiated only by the backends with the CPU's float kernel).
  template <class A>
  kernels::FlashRows flash_rows(const A* qkv) const {
    return {qkv, d_.Wqkv, kv_, kv_ + d_.KVH * d_.hd, 2 * d_.KVH * d_.hd, q_pos_.data(),
            d_.B, d_.T, d_.Tg, d_.NH, d_.KVH, d_.hd};
  }
  int64_t stats_per_layer() const;
  // Whether a layer's stash keeps the (B, NH, T, T) probabilities: unfused attention without
  // selective recompute.
  bool keeps_scores() const { return !d_.flash && p_.recompute != Recompute::selective; }
  // A layer's activations: its dense MLP's and/or its MoE FFN's (the recompute working set may
  // need both).
  struct LayerKind {
    bool dense_mlp = true, moe = false;
  };
  LayerKind layer_kind(int64_t local_layer) const;
  Acts layout_layer(act*& cur, float*& fcur, bool full, LayerKind kind) const;
  int64_t act_floats_per_layer(LayerKind kind) const;

  Be& be_;
  ModelSpec m_;
  PlanSpec p_;
  int64_t stage_ = 0;
  bool first_ = false, last_ = false;
  int64_t first_layer_ = 0;
  Dims d_;
  std::vector<ParamTensor> table_;
  ChunkWeightsT<wt> w_;
  ChunkWeightsT<float> g_;
  // Scratch shared by the micro-batches: recompute working set and backward temporaries,
  // allocated once here.
  typename Be::template Buffer<act> scratch_;
  typename Be::template Buffer<float> scratch_stats_;
  typename Be::template Buffer<float> inv_freq_;  // (head_dim / 2) with rope
  Acts work_;  // full layer activations for recomputation
  act *tmp_ = nullptr, *dln_ = nullptr, *dqkv_ = nullptr, *datty_ = nullptr;
  act *dfch_ = nullptr, *dfch_act_ = nullptr, *att_scratch_ = nullptr, *atty_scratch_ = nullptr;
  act* dres_full_ = nullptr;
  // Context parallelism (cp > 1): this rank's rows' positions, the keys each row attends in
  // total, and the key/value buffers of gather_kv and scatter_dkv.
  std::vector<int64_t> q_pos_;
  int64_t attended_ = 0;
  act *kv_ = nullptr, *dkv_ = nullptr, *kv_ranks_ = nullptr;
  // Mixture of experts: the layer (shared by this chunk's MoE layers), and the recompute working
  // set's kind (dense and/or MoE, as the chunk's layers are).
  std::unique_ptr<MoeLayer> moe_;
  LayerKind work_kind_;
};

namespace chunk_detail {
inline std::string gemm_shape(int64_t M, int64_t K, int64_t N) {
  return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
}
inline std::string shape2(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }
}  // namespace chunk_detail

template <class Be>
ChunkT<Be>::ChunkT(Be& be, const ModelSpec& m, const PlanSpec& p, int64_t stage, int64_t tp_rank,
                   int64_t cp_rank, int64_t offset, bool flash_attention, int64_t ep_rank)
    : be_(be), m_(m), p_(p), stage_(stage) {
  if (flash_attention && !Be::kFlashAttention)
    throw std::logic_error(std::string("the ") + Be::kName + " backend has no fused attention kernel");
  const int64_t stages = p.pp * p.vpp;
  first_ = stage == 0;
  last_ = stage == stages - 1;
  first_layer_ = stage * layers_per_stage(m, p);
  table_ = stage_param_table(m, p, stage, tp_rank, offset, ep_rank);
  d_ = chunk_dims(m, p, tp_rank, cp_rank, flash_attention);
  if (d_.cp > 1 && !d_.flash)
    throw std::logic_error("context parallelism runs with the fused attention kernel only");
  if (!d_.flash) be.reserve_attention(d_.B, d_.T, d_.NH);
  q_pos_ = cp_positions(d_.Tg, d_.cp, cp_rank);
  for (const int64_t pos : q_pos_) attended_ += pos + 1;
  const int64_t kv_all = d_.cp > 1 ? d_.B * d_.Tg * 2 * d_.KVH * d_.hd : 0;
  const int64_t att_square = d_.flash ? 0 : d_.B * d_.NH * d_.T * d_.T;
  work_kind_.dense_mlp = false;
  for (int64_t l = 0; l < layers_per_stage(m, p); ++l) {
    const LayerKind k = layer_kind(l);
    work_kind_.dense_mlp = work_kind_.dense_mlp || k.dense_mlp;
    work_kind_.moe = work_kind_.moe || k.moe;
  }
  if (work_kind_.moe) {
    if constexpr (backend_runs_moe<Be>())
      moe_ = std::make_unique<MoeLayer>(moe_shape(m, p, d_, ep_rank));
    else
      throw std::logic_error(std::string("the ") + Be::kName + " backend runs no mixture-of-experts layers");
  }

  // Scratch: one full layer (recompute), proj output, backward temporaries.
  const int64_t N = d_.N, C = d_.C;
  const int64_t layer = act_floats_per_layer(work_kind_) + N * C;  // + work_.out
  const int64_t temps = N * C * 3 + N * d_.Wqkv + N * d_.Ct * 2 + N * d_.fc_out + N * d_.F +
                        att_square + 3 * kv_all;
  scratch_ = be.template alloc<act>(layer + temps);
  scratch_stats_ = be.template alloc<float>(stats_per_layer());
  act* cur = scratch_.data();
  float* fcur = scratch_stats_.data();
  work_ = layout_layer(cur, fcur, false, work_kind_);
  work_.out = cur;
  cur += N * C;
  auto take = [&cur](int64_t n) {
    act* p0 = cur;
    cur += n;
    return p0;
  };
  tmp_ = take(N * C);
  dln_ = take(N * C);
  dres_full_ = take(N * C);
  dqkv_ = take(N * d_.Wqkv);
  datty_ = take(N * d_.Ct);
  atty_scratch_ = take(N * d_.Ct);
  dfch_ = take(N * d_.fc_out);
  dfch_act_ = take(N * d_.F);
  att_scratch_ = d_.flash ? nullptr : take(att_square);
  if (kv_all > 0) {
    kv_ = take(kv_all);
    dkv_ = take(kv_all);
    kv_ranks_ = take(kv_all);
  }
  if (d_.rope) {
    kernels::RopeScaling scaling;
    scaling.factor = m.rope_scaling.factor;
    scaling.low_freq_factor = m.rope_scaling.low_freq_factor;
    scaling.high_freq_factor = m.rope_scaling.high_freq_factor;
    scaling.original_max_position = static_cast<double>(m.rope_scaling.original_max_position);
    std::vector<float> host(static_cast<size_t>(d_.hd / 2));
    kernels::rope_inv_freq(host.data(), d_.hd, m.rope_base, scaling);
    inv_freq_ = be.template alloc<float>(d_.hd / 2);
    be.upload(inv_freq_.data(), host.data(), d_.hd / 2);
  }
}

// fp32 statistics of one layer: the two norms' mean and rstd (Ns each), and with fused
// attention each query row's log-sum-exp.
template <class Be>
int64_t ChunkT<Be>::stats_per_layer() const {
  return 4 * d_.Ns + (d_.flash ? d_.B * d_.NH * d_.T : 0);
}

template <class Be>
typename ChunkT<Be>::LayerKind ChunkT<Be>::layer_kind(int64_t local_layer) const {
  LayerKind k;
  k.moe = m_.is_moe_layer(first_layer_ + local_layer);
  k.dense_mlp = !k.moe;
  return k;
}

template <class Be>
int64_t ChunkT<Be>::act_floats_per_layer(LayerKind kind) const {
  const int64_t N = d_.N, C = d_.C;
  const int64_t att = keeps_scores() ? d_.B * d_.NH * d_.T * d_.T : 0;
  int64_t floats = 2 * N * C + d_.Ns * C + N * d_.Wqkv + att + N * d_.Ct;
  if (kind.dense_mlp) floats += N * d_.fc_out + N * d_.F;
  if (kind.moe) floats += moe_->act_floats();
  return floats;
}

template <class Be>
LayerActsT<typename Be::act> ChunkT<Be>::layout_layer(act*& cur, float*& fcur, bool full,
                                                      LayerKind kind) const {
  Acts a;
  if (full) return a;
  const int64_t N = d_.N, C = d_.C, Ns = d_.Ns;
  auto take = [&cur](int64_t n) {
    act* p0 = cur;
    cur += n;
    return p0;
  };
  auto stat = [&fcur](int64_t n) {
    float* p0 = fcur;
    fcur += n;
    return p0;
  };
  a.ln1 = take(N * C);
  a.ln1_mean = stat(Ns);
  a.ln1_rstd = stat(Ns);
  a.qkv = take(N * d_.Wqkv);
  a.att = keeps_scores() ? take(d_.B * d_.NH * d_.T * d_.T) : nullptr;
  if (d_.flash) a.lse = stat(d_.B * d_.NH * d_.T);
  a.atty = take(N * d_.Ct);
  a.resid2 = take(Ns * C);
  a.ln2 = take(N * C);
  a.ln2_mean = stat(Ns);
  a.ln2_rstd = stat(Ns);
  if (kind.dense_mlp) {
    a.fch = take(N * d_.fc_out);
    a.fch_act = take(N * d_.F);
  }
  if (kind.moe) a.moe = take(moe_->act_floats());
  return a;
}

template <class Be>
void ChunkT<Be>::bind(wt* params, float* grads) {
  std::map<std::string, std::pair<wt*, float*>> by_name;
  for (const auto& t : table_) by_name[t.name] = {params + t.offset, grads + t.offset};
  auto fill = [&](auto& w, auto get) {
    w.wte = first_ ? get("wte.weight") : nullptr;
    w.wpe = get("wpe.weight");
    w.lnfw = get("ln_f.weight");
    w.lnfb = get("ln_f.bias");
    w.head = m_.tied_embeddings ? get("wte.weight") : get("lm_head.weight");
    w.layers.clear();
    for (int64_t l = 0; l < layers_per_stage(m_, p_); ++l) {
      const std::string h = "h." + std::to_string(first_layer_ + l) + ".";
      typename std::decay_t<decltype(w.layers)>::value_type L;
      L.ln1w = get(h + "ln_1.weight");
      L.ln1b = get(h + "ln_1.bias");
      L.qkvw = get(h + "attn.c_attn.weight");
      L.qkvb = get(h + "attn.c_attn.bias");
      L.attprojw = get(h + "attn.c_proj.weight");
      L.attprojb = get(h + "attn.c_proj.bias");
      L.ln2w = get(h + "ln_2.weight");
      L.ln2b = get(h + "ln_2.bias");
      L.fcw = get(h + "mlp.c_fc.weight");
      L.fcb = get(h + "mlp.c_fc.bias");
      L.fcprojw = get(h + "mlp.c_proj.weight");
      L.fcprojb = get(h + "mlp.c_proj.bias");
      L.router = get(h + "mlp.router.weight");
      for (int64_t e = 0; L.router && e < m_.moe.num_experts; ++e) {
        const std::string x = h + "mlp.experts." + std::to_string(e) + ".";
        L.expert_fc.push_back(get(x + "c_fc.weight"));
        L.expert_proj.push_back(get(x + "c_proj.weight"));
      }
      L.shared_fc = get(h + "mlp.shared_experts.c_fc.weight");
      L.shared_proj = get(h + "mlp.shared_experts.c_proj.weight");
      w.layers.push_back(L);
    }
  };
  fill(w_, [&](const std::string& n) -> wt* {
    auto it = by_name.find(n);
    return it == by_name.end() ? nullptr : it->second.first;
  });
  fill(g_, [&](const std::string& n) -> float* {
    auto it = by_name.find(n);
    return it == by_name.end() ? nullptr : it->second.second;
  });
}

template <class Be>
std::unique_ptr<StashT<Be>> ChunkT<Be>::make_stash() const {
  auto s = std::make_unique<Stash>();
  const int64_t N = d_.N, C = d_.C, Ns = d_.Ns;
  const int64_t L = layers_per_stage(m_, p_);
  s->recomputed.resize(static_cast<size_t>(L));
  int64_t floats = Ns * C + Ns * C;  // input, dres
  int64_t stats = 0;
  for (int64_t l = 0; l < L; ++l) {
    const bool full = p_.recompute == Recompute::full &&
                      (p_.recompute_layers == 0 || l < p_.recompute_layers);
    s->recomputed[static_cast<size_t>(l)] = full;
    floats += Ns * C + (full ? 0 : act_floats_per_layer(layer_kind(l)));
    stats += full ? 0 : stats_per_layer();
  }
  if (last_) {
    floats += N * C + N * d_.Vl;
    stats += 2 * Ns + N + 3 * N;
  }
  s->data = be_.template alloc<act>(floats);
  s->stats = be_.template alloc<float>(std::max<int64_t>(stats, 1));
  act* cur = s->data.data();
  float* fcur = s->stats.data();
  s->input = cur;
  cur += Ns * C;
  s->dres = cur;
  cur += Ns * C;
  act* prev = s->input;
  for (int64_t l = 0; l < L; ++l) {
    Acts a = layout_layer(cur, fcur, s->recomputed[static_cast<size_t>(l)], layer_kind(l));
    a.inp = prev;
    a.out = cur;
    cur += Ns * C;
    prev = a.out;
    s->layers.push_back(a);
  }
  if (last_) {
    s->lnf = cur;
    cur += N * C;
    s->logits = cur;
    s->lnf_mean = fcur;
    fcur += Ns;
    s->lnf_rstd = fcur;
    fcur += Ns;
    s->losses = fcur;
    fcur += N;
    s->ce = fcur;
  }
  return s;
}

template <class Be>
void ChunkT<Be>::matmul(act* out, const act* inp, const wt* w, const wt* b, int64_t C,
                        int64_t OC, Ctx& x, const char* name) {
  x.be.time(name, 2.0 * static_cast<double>(d_.N * C * OC), chunk_detail::gemm_shape(d_.N, C, OC),
            [&] { x.be.matmul_forward(out, inp, w, b, d_.N, C, OC); });
}

template <class Be>
void ChunkT<Be>::matmul_back(act* dinp, float* dw, float* db, const act* dout, const act* inp,
                             const wt* w, int64_t C, int64_t OC, Ctx& x, const char* name) {
  const double flops = (dinp ? 4.0 : 2.0) * static_cast<double>(d_.N * C * OC);
  x.be.time(name, flops, chunk_detail::gemm_shape(d_.N, C, OC),
            [&] { x.be.matmul_backward(dinp, dw, db, dout, inp, w, d_.N, C, OC); });
}

template <class Be>
void ChunkT<Be>::norm_forward(act* out, float* mean, float* rstd, const act* inp, const wt* w,
                              const wt* b, Ctx& x, const char* name) {
  x.be.time(name, 8.0 * static_cast<double>(d_.Ns * d_.C), chunk_detail::shape2(d_.Ns, d_.C), [&] {
    if (d_.layernorm)
      x.be.layernorm_forward(out, mean, rstd, inp, w, b, d_.Ns, d_.C);
    else
      x.be.rmsnorm_forward(out, rstd, inp, w, d_.Ns, d_.C);
  });
}

template <class Be>
void ChunkT<Be>::norm_backward(act* dinp, float* dw, float* db, const act* dout, const act* inp,
                               const wt* w, const float* mean, const float* rstd, Ctx& x,
                               const char* name) {
  x.be.time(name, 16.0 * static_cast<double>(d_.Ns * d_.C), chunk_detail::shape2(d_.Ns, d_.C), [&] {
    if (d_.layernorm)
      x.be.layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, d_.Ns, d_.C);
    else
      x.be.rmsnorm_backward(dinp, dw, dout, inp, w, rstd, d_.Ns, d_.C);
  });
}

template <class Be>
void ChunkT<Be>::gather_rows(act* full, Ctx& x, const char* name) {
  if (d_.sp) x.comm.all_gather(full, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
}

template <class Be>
typename Be::act* ChunkT<Be>::scatter_rows(act* full, Ctx& x, const char* name) {
  if (!d_.sp) {
    x.comm.all_reduce_sum(full, d_.N * d_.C, x.groups.tp, Stream::tp, name);
    return full;
  }
  x.comm.reduce_scatter_sum(full, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
  return full + d_.row0 * d_.C;
}

template <class Be>
const typename Be::act* ChunkT<Be>::gathered_grad(const act* dres, Ctx& x, const char* name) {
  if (!d_.sp) return dres;
  x.be.copy(dres_full_ + d_.row0 * d_.C, dres, d_.Ns * d_.C);
  x.comm.all_gather(dres_full_, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
  return dres_full_;
}

}  // namespace parallax::exec

#include "chunk_attention_impl.hpp"  // IWYU pragma: export
#include "chunk_passes_impl.hpp"     // IWYU pragma: export
