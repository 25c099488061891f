#include "parallax/executor/chunk.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

namespace k = parallax::kernels;

namespace {

void zero(float* x, int64_t n) { std::fill(x, x + n, 0.0f); }

std::string gemm_shape(int64_t M, int64_t K, int64_t N) {
  return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
}

}  // namespace

Chunk::Chunk(const ModelSpec& m, const PlanSpec& p, int64_t stage, int64_t tp_rank, int64_t offset)
    : m_(m), p_(p), stage_(stage) {
  const int64_t stages = p.pp * p.vpp;
  first_ = stage == 0;
  last_ = stage == stages - 1;
  first_layer_ = stage * layers_per_stage(m, p);
  table_ = stage_param_table(m, p, stage, tp_rank, offset);
  d_.B = p.micro_batch;
  d_.T = m.seq_len;
  d_.N = d_.B * d_.T;
  d_.C = m.hidden;
  d_.NH = m.heads / p.tp;
  d_.Ct = d_.NH * m.head_dim();
  d_.F = m.ffn_hidden / p.tp;
  d_.swiglu = m.activation == Activation::swiglu;
  d_.fc_out = d_.swiglu ? 2 * d_.F : d_.F;
  d_.Vl = vocab_padded(m.vocab, p.tp) / p.tp;
  d_.vocab_start = tp_rank * d_.Vl;
  d_.vocab_valid = std::clamp<int64_t>(m.vocab - d_.vocab_start, 0, d_.Vl);
  d_.layernorm = m.norm == Norm::layernorm;
  d_.learned_pos = m.position == Position::learned;
  d_.sp = p.sequence_parallel && p.tp > 1;
  d_.Ns = d_.sp ? d_.N / p.tp : d_.N;
  d_.row0 = d_.sp ? tp_rank * d_.Ns : 0;

  // Scratch: one full layer (recompute), proj output, backward temporaries.
  const int64_t N = d_.N, C = d_.C;
  const int64_t layer = N * C * 5 + 4 * N + N * 3 * d_.Ct + d_.B * d_.NH * d_.T * d_.T +
                        N * d_.Ct + N * d_.fc_out + N * d_.F;
  const int64_t temps = N * C * 3 + N * 3 * d_.Ct + N * d_.Ct * 2 + N * d_.fc_out + N * d_.F +
                        d_.B * d_.NH * d_.T * d_.T;
  scratch_.assign(static_cast<size_t>(layer + temps), 0.0f);
  float* cur = scratch_.data();
  work_ = layout_layer(cur, false);
  work_.out = cur;
  cur += N * C;
  auto take = [&cur](int64_t n) {
    float* p0 = cur;
    cur += n;
    return p0;
  };
  tmp_ = take(N * C);
  dln_ = take(N * C);
  dres_full_ = take(N * C);
  dqkv_ = take(N * 3 * d_.Ct);
  datty_ = take(N * d_.Ct);
  atty_scratch_ = take(N * d_.Ct);
  dfch_ = take(N * d_.fc_out);
  dfch_act_ = take(N * d_.F);
  att_scratch_ = take(d_.B * d_.NH * d_.T * d_.T);
}

LayerActs Chunk::layout_layer(float*& cur, bool full) const {
  LayerActs a;
  if (full) return a;
  const int64_t N = d_.N, C = d_.C;
  auto take = [&cur](int64_t n) {
    float* p0 = cur;
    cur += n;
    return p0;
  };
  const int64_t Ns = d_.Ns;
  a.ln1 = take(N * C);
  a.ln1_mean = take(Ns);
  a.ln1_rstd = take(Ns);
  a.qkv = take(N * 3 * d_.Ct);
  a.att = p_.recompute == Recompute::selective ? nullptr : take(d_.B * d_.NH * d_.T * d_.T);
  a.atty = take(N * d_.Ct);
  a.resid2 = take(Ns * C);
  a.ln2 = take(N * C);
  a.ln2_mean = take(Ns);
  a.ln2_rstd = take(Ns);
  a.fch = take(N * d_.fc_out);
  a.fch_act = take(N * d_.F);
  return a;
}

void Chunk::bind(float* params, float* grads) {
  std::map<std::string, std::pair<float*, float*>> by_name;
  for (const auto& t : table_) by_name[t.name] = {params + t.offset, grads + t.offset};
  auto get = [&](const std::string& n, bool grad) -> float* {
    auto it = by_name.find(n);
    if (it == by_name.end()) return nullptr;
    return grad ? it->second.second : it->second.first;
  };
  for (int gi = 0; gi < 2; ++gi) {
    const bool grad = gi == 1;
    ChunkWeights& w = grad ? g_ : w_;
    w.wte = first_ ? get("wte.weight", grad) : nullptr;
    w.wpe = get("wpe.weight", grad);
    w.lnfw = get("ln_f.weight", grad);
    w.lnfb = get("ln_f.bias", grad);
    w.head = m_.tied_embeddings ? get("wte.weight", grad) : get("lm_head.weight", grad);
    w.layers.clear();
    for (int64_t l = 0; l < layers_per_stage(m_, p_); ++l) {
      const std::string h = "h." + std::to_string(first_layer_ + l) + ".";
      LayerWeights L;
      L.ln1w = get(h + "ln_1.weight", grad);
      L.ln1b = get(h + "ln_1.bias", grad);
      L.qkvw = get(h + "attn.c_attn.weight", grad);
      L.qkvb = get(h + "attn.c_attn.bias", grad);
      L.attprojw = get(h + "attn.c_proj.weight", grad);
      L.attprojb = get(h + "attn.c_proj.bias", grad);
      L.ln2w = get(h + "ln_2.weight", grad);
      L.ln2b = get(h + "ln_2.bias", grad);
      L.fcw = get(h + "mlp.c_fc.weight", grad);
      L.fcb = get(h + "mlp.c_fc.bias", grad);
      L.fcprojw = get(h + "mlp.c_proj.weight", grad);
      L.fcprojb = get(h + "mlp.c_proj.bias", grad);
      w.layers.push_back(L);
    }
  }
}

std::unique_ptr<Stash> Chunk::make_stash() const {
  auto s = std::make_unique<Stash>();
  const int64_t N = d_.N, C = d_.C;
  const int64_t L = layers_per_stage(m_, p_);
  s->recomputed.resize(static_cast<size_t>(L));
  const int64_t Ns = d_.Ns;
  int64_t floats = Ns * C;  // input
  {
    const int64_t att = p_.recompute == Recompute::selective ? 0 : d_.B * d_.NH * d_.T * d_.T;
    const int64_t per_layer = 2 * N * C + Ns * C + 4 * Ns + N * 3 * d_.Ct + att + N * d_.Ct +
                              N * d_.fc_out + N * d_.F;
    for (int64_t l = 0; l < L; ++l) {
      const bool full = p_.recompute == Recompute::full &&
                        (p_.recompute_layers == 0 || l < p_.recompute_layers);
      s->recomputed[static_cast<size_t>(l)] = full;
      floats += Ns * C + (full ? 0 : per_layer);
    }
  }
  if (last_) floats += N * C + 2 * Ns + N * d_.Vl + N + 3 * N;
  s->data.assign(static_cast<size_t>(floats), 0.0f);
  s->tokens.assign(static_cast<size_t>(N), 0);
  s->targets.assign(static_cast<size_t>(N), 0);
  float* cur = s->data.data();
  s->input = cur;
  cur += Ns * C;
  const float* prev = s->input;
  for (int64_t l = 0; l < L; ++l) {
    LayerActs a = layout_layer(cur, s->recomputed[static_cast<size_t>(l)]);
    a.inp = const_cast<float*>(prev);
    a.out = cur;
    cur += Ns * C;
    prev = a.out;
    s->layers.push_back(a);
  }
  if (last_) {
    s->lnf = cur;
    cur += N * C;
    s->lnf_mean = cur;
    cur += Ns;
    s->lnf_rstd = cur;
    cur += Ns;
    s->logits = cur;
    cur += N * d_.Vl;
    s->losses = cur;
    cur += N;
    s->ce = cur;
  }
  return s;
}

void Chunk::matmul(float* out, const float* inp, const float* w, const float* b, int64_t C,
                   int64_t OC, ExecContext& x, const char* name) {
  x.rec.time(name, 2.0 * static_cast<double>(d_.N * C * OC), gemm_shape(d_.N, C, OC),
             [&] { k::matmul_forward(out, inp, w, b, d_.N, C, OC); });
}

void Chunk::matmul_back(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, int64_t C, int64_t OC, ExecContext& x, const char* name) {
  const double flops = (dinp ? 4.0 : 2.0) * static_cast<double>(d_.N * C * OC);
  x.rec.time(name, flops, gemm_shape(d_.N, C, OC),
             [&] { k::matmul_backward(dinp, dw, db, dout, inp, w, d_.N, C, OC); });
}

void Chunk::norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                         const float* b, ExecContext& x, const char* name) {
  x.rec.time(name, 8.0 * static_cast<double>(d_.Ns * d_.C), std::to_string(d_.Ns) + "x" + std::to_string(d_.C), [&] {
    if (d_.layernorm)
      k::layernorm_forward(out, mean, rstd, inp, w, b, d_.Ns, d_.C);
    else
      k::rmsnorm_forward(out, rstd, inp, w, d_.Ns, d_.C);
  });
}

void Chunk::norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                          const float* w, const float* mean, const float* rstd, ExecContext& x,
                          const char* name) {
  x.rec.time(name, 16.0 * static_cast<double>(d_.Ns * d_.C), std::to_string(d_.Ns) + "x" + std::to_string(d_.C), [&] {
    if (d_.layernorm)
      k::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, d_.Ns, d_.C);
    else
      k::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, d_.Ns, d_.C);
  });
}

void Chunk::gather_rows(float* full, ExecContext& x, const char* name) {
  if (d_.sp) x.comm.all_gather(full, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
}

float* Chunk::scatter_rows(float* full, ExecContext& x, const char* name) {
  if (!d_.sp) {
    x.comm.all_reduce_sum(full, d_.N * d_.C, x.groups.tp, Stream::tp, name);
    return full;
  }
  x.comm.reduce_scatter_sum(full, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
  return full + d_.row0 * d_.C;
}

const float* Chunk::gathered_grad(const float* dres, ExecContext& x, const char* name) {
  if (!d_.sp) return dres;
  std::copy(dres, dres + d_.Ns * d_.C, dres_full_ + d_.row0 * d_.C);
  x.comm.all_gather(dres_full_, d_.Ns * d_.C, x.groups.tp, name, Stream::tp);
  return dres_full_;
}

void Chunk::layer_forward(const LayerWeights& w, const LayerActs& a, ExecContext& x) {
  const int64_t N = d_.N, Ns = d_.Ns, C = d_.C;
  norm_forward(a.ln1 + d_.row0 * C, a.ln1_mean, a.ln1_rstd, a.inp, w.ln1w, w.ln1b, x, "ln_1");
  gather_rows(a.ln1, x, "tp_all_gather_ln_1");
  matmul(a.qkv, a.ln1, w.qkvw, w.qkvb, C, 3 * d_.Ct, x, "matmul_qkv");
  const double attn_flops = 4.0 * static_cast<double>(d_.B * d_.T * d_.T * d_.Ct);
  x.rec.time("attention", attn_flops, std::to_string(d_.B) + "x" + std::to_string(d_.NH) + "x" + std::to_string(d_.T),
             [&] {
               k::attention_forward(a.atty, a.att ? a.att : att_scratch_, a.qkv, d_.B, d_.T,
                                    d_.Ct, d_.NH);
             });
  matmul(tmp_, a.atty, w.attprojw, nullptr, d_.Ct, C, x, "matmul_attn_proj");
  float* part = scatter_rows(tmp_, x, "tp_all_reduce_attn_proj");
  x.rec.time("residual", static_cast<double>(2 * Ns * C), std::to_string(Ns * C), [&] {
    k::bias_forward(part, w.attprojb, Ns, C);
    k::residual_forward(a.resid2, a.inp, part, Ns * C);
  });
  norm_forward(a.ln2 + d_.row0 * C, a.ln2_mean, a.ln2_rstd, a.resid2, w.ln2w, w.ln2b, x, "ln_2");
  gather_rows(a.ln2, x, "tp_all_gather_ln_2");
  matmul(a.fch, a.ln2, w.fcw, w.fcb, C, d_.fc_out, x, "matmul_fc");
  x.rec.time(d_.swiglu ? "swiglu" : "gelu", 8.0 * static_cast<double>(N * d_.F), std::to_string(N * d_.F), [&] {
    if (d_.swiglu)
      k::swiglu_forward(a.fch_act, a.fch, N, d_.F);
    else
      k::gelu_forward(a.fch_act, a.fch, N * d_.F);
  });
  matmul(tmp_, a.fch_act, w.fcprojw, nullptr, d_.F, C, x, "matmul_fc_proj");
  part = scatter_rows(tmp_, x, "tp_all_reduce_fc_proj");
  x.rec.time("residual", static_cast<double>(2 * Ns * C), std::to_string(Ns * C), [&] {
    k::bias_forward(part, w.fcprojb, Ns, C);
    k::residual_forward(a.out, a.resid2, part, Ns * C);
  });
}

void Chunk::layer_backward(const LayerWeights& w, const LayerWeights& g, const LayerActs& a,
                           float* dres, ExecContext& x) {
  const int64_t N = d_.N, Ns = d_.Ns, C = d_.C;
  // MLP branch: dres (Ns, C) is the gradient of out = resid2 + fc_proj.
  x.rec.time("bias_backward", static_cast<double>(Ns * C), std::to_string(Ns * C),
             [&] { k::bias_backward(g.fcprojb, dres, Ns, C); });
  const float* dfull = gathered_grad(dres, x, "tp_all_gather_fc_proj_backward");
  zero(dfch_act_, N * d_.F);
  matmul_back(dfch_act_, g.fcprojw, nullptr, dfull, a.fch_act, w.fcprojw, d_.F, C, x,
              "matmul_fc_proj_backward");
  zero(dfch_, N * d_.fc_out);
  x.rec.time(d_.swiglu ? "swiglu_backward" : "gelu_backward", 12.0 * static_cast<double>(N * d_.F), std::to_string(N * d_.F), [&] {
    if (d_.swiglu)
      k::swiglu_backward(dfch_, a.fch, dfch_act_, N, d_.F);
    else
      k::gelu_backward(dfch_, a.fch, dfch_act_, N * d_.F);
  });
  zero(dln_, N * C);
  matmul_back(dln_, g.fcw, g.fcb, dfch_, a.ln2, w.fcw, C, d_.fc_out, x, "matmul_fc_backward");
  const float* dpart = scatter_rows(dln_, x, "tp_all_reduce_fc_backward");
  norm_backward(dres, g.ln2w, g.ln2b, dpart, a.resid2, w.ln2w, a.ln2_mean, a.ln2_rstd, x,
                "ln_2_backward");
  // Attention branch: dres is now the gradient of resid2 = inp + attn_proj.
  x.rec.time("bias_backward", static_cast<double>(Ns * C), std::to_string(Ns * C),
             [&] { k::bias_backward(g.attprojb, dres, Ns, C); });
  dfull = gathered_grad(dres, x, "tp_all_gather_attn_proj_backward");
  zero(datty_, N * d_.Ct);
  matmul_back(datty_, g.attprojw, nullptr, dfull, a.atty, w.attprojw, d_.Ct, C, x,
              "matmul_attn_proj_backward");
  const float* att = a.att;
  if (!att) {  // selective recompute: the attention scores again, from the kept qkv
    x.rec.time("attention_recompute", 4.0 * static_cast<double>(d_.B * d_.T * d_.T * d_.Ct), "", [&] {
      k::attention_forward(atty_scratch_, att_scratch_, a.qkv, d_.B, d_.T, d_.Ct, d_.NH);
    });
    att = att_scratch_;
  }
  zero(dqkv_, N * 3 * d_.Ct);
  x.rec.time("attention_backward", 8.0 * static_cast<double>(d_.B * d_.T * d_.T * d_.Ct), "",
             [&] { k::attention_backward(dqkv_, datty_, a.qkv, att, d_.B, d_.T, d_.Ct, d_.NH); });
  zero(dln_, N * C);
  matmul_back(dln_, g.qkvw, g.qkvb, dqkv_, a.ln1, w.qkvw, C, 3 * d_.Ct, x,
              "matmul_qkv_backward");
  dpart = scatter_rows(dln_, x, "tp_all_reduce_qkv_backward");
  norm_backward(dres, g.ln1w, g.ln1b, dpart, a.inp, w.ln1w, a.ln1_mean, a.ln1_rstd, x,
                "ln_1_backward");
}

double Chunk::forward(Stash& s, float dloss, ExecContext& x) {
  const int64_t N = d_.N, C = d_.C;
  if (first_) {
    x.rec.time("embedding", static_cast<double>(N * C), std::to_string(N) + "x" + std::to_string(C), [&] {
      k::embedding_forward(tmp_, s.tokens.data(), w_.wte, d_.vocab_start, d_.Vl, N, C);
    });
    const float* part = scatter_rows(tmp_, x, "tp_all_reduce_embedding");
    std::copy(part, part + d_.Ns * C, s.input);
    if (d_.learned_pos) k::position_forward_rows(s.input, w_.wpe, d_.row0, d_.Ns, d_.T, C);
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    LayerActs a = s.layers[l];
    if (s.recomputed[l]) {  // run into the shared working set; keep only the output
      LayerActs wk = work_;
      wk.inp = a.inp;
      wk.out = a.out;
      layer_forward(w_.layers[l], wk, x);
    } else {
      layer_forward(w_.layers[l], a, x);
    }
  }
  if (!last_) return 0.0;
  norm_forward(s.lnf + d_.row0 * C, s.lnf_mean, s.lnf_rstd, s.output(), w_.lnfw, w_.lnfb, x, "ln_f");
  gather_rows(s.lnf, x, "tp_all_gather_ln_f");
  matmul(s.logits, s.lnf, w_.head, nullptr, C, d_.Vl, x, "matmul_logits");
  if (x.logits_copy) std::copy(s.logits, s.logits + N * d_.Vl, x.logits_copy);
  float* maxes = s.ce;
  float* sums = s.ce + N;  // sums and target are adjacent: one all-reduce
  float* target = s.ce + 2 * N;
  const double t0 = x.rec.now_s();
  k::crossentropy_local_max(maxes, s.logits, N, d_.Vl, d_.vocab_valid);
  x.comm.all_reduce_max(maxes, N, x.groups.tp, Stream::tp, "tp_all_reduce_ce_max");
  k::crossentropy_local_sums(sums, target, s.logits, maxes, s.targets.data(), d_.vocab_start, N,
                             d_.Vl, d_.vocab_valid);
  x.comm.all_reduce_sum(sums, 2 * N, x.groups.tp, Stream::tp, "tp_all_reduce_ce_sums");
  k::crossentropy_finish(s.losses, s.logits, maxes, sums, target, s.targets.data(),
                         d_.vocab_start, dloss, N, d_.Vl, d_.vocab_valid);
  x.rec.add("crossentropy", Stream::compute, t0, x.rec.now_s(), 5.0 * static_cast<double>(N * d_.Vl), 0,
            std::to_string(N) + "x" + std::to_string(d_.Vl));
  double loss = 0.0;
  for (int64_t i = 0; i < N; ++i) loss += static_cast<double>(s.losses[i]);
  return loss * static_cast<double>(dloss);
}

void Chunk::backward(Stash& s, float* dres, ExecContext& x) {
  const int64_t N = d_.N, C = d_.C;
  if (last_) {
    zero(dln_, N * C);
    matmul_back(dln_, g_.head, nullptr, s.logits, s.lnf, w_.head, C, d_.Vl, x,
                "matmul_logits_backward");
    const float* dpart = scatter_rows(dln_, x, "tp_all_reduce_logits_backward");
    zero(dres, d_.Ns * C);
    norm_backward(dres, g_.lnfw, g_.lnfb, dpart, s.output(), w_.lnfw, s.lnf_mean, s.lnf_rstd, x,
                  "ln_f_backward");
  }
  for (size_t i = s.layers.size(); i-- > 0;) {
    const LayerActs& a = s.layers[i];
    if (s.recomputed[i]) {
      LayerActs wk = work_;
      wk.inp = a.inp;
      layer_forward(w_.layers[i], wk, x);  // recompute into the working set (out too)
      layer_backward(w_.layers[i], g_.layers[i], wk, dres, x);
    } else {
      layer_backward(w_.layers[i], g_.layers[i], a, dres, x);
    }
  }
  if (first_) {
    x.rec.time("embedding_backward", static_cast<double>(N * C), std::to_string(N) + "x" + std::to_string(C), [&] {
      if (d_.learned_pos) k::position_backward_rows(g_.wpe, dres, d_.row0, d_.Ns, d_.T, C);
    });
    const float* dfull = gathered_grad(dres, x, "tp_all_gather_embedding_backward");
    x.rec.time("embedding_backward", 0.0, "", [&] {
      k::embedding_backward(g_.wte, dfull, s.tokens.data(), d_.vocab_start, d_.Vl, N, C);
    });
  }
}

}  // namespace parallax::exec
