#pragma once
// The chunk's passes (chunk_impl.hpp): one layer forward and backward (attention, then the dense
// MLP or the mixture of experts), and the chunk's forward and backward over its layers.
// Included at the end of chunk_impl.hpp, after the class it defines members of.
#include <algorithm>
#include <string>

#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

template <class Be>
void ChunkT<Be>::layer_forward(const LayerWeightsT<wt>& w, const Acts& a, Ctx& x, double* aux_acc) {
  using chunk_detail::shape2;
  const int64_t Ns = d_.Ns, C = d_.C;
  norm_forward(a.ln1 + d_.row0 * C, a.ln1_mean, a.ln1_rstd, a.inp, w.ln1w, w.ln1b, x, "ln_1");
  gather_rows(a.ln1, x, "tp_all_gather_ln_1");
  matmul(a.qkv, a.ln1, w.qkvw, w.qkvb, C, d_.Wqkv, x, "matmul_qkv");
  if (d_.rope) rope(a.qkv, x, false);
  attention(a, x);
  matmul(tmp_, a.atty, w.attprojw, nullptr, d_.Ct, C, x, "matmul_attn_proj");
  act* part = scatter_rows(tmp_, x, "tp_all_reduce_attn_proj");
  x.be.time("residual", static_cast<double>(2 * Ns * C), std::to_string(Ns * C), [&] {
    if (w.attprojb) x.be.bias_forward(part, w.attprojb, Ns, C);
    x.be.residual_forward(a.resid2, a.inp, part, Ns * C);
  });
  norm_forward(a.ln2 + d_.row0 * C, a.ln2_mean, a.ln2_rstd, a.resid2, w.ln2w, w.ln2b, x, "ln_2");
  gather_rows(a.ln2, x, "tp_all_gather_ln_2");
  mlp_forward(w, a, x, aux_acc);
  part = scatter_rows(tmp_, x, "tp_all_reduce_fc_proj");
  x.be.time("residual", static_cast<double>(2 * Ns * C), std::to_string(Ns * C), [&] {
    if (w.fcprojb) x.be.bias_forward(part, w.fcprojb, Ns, C);
    x.be.residual_forward(a.out, a.resid2, part, Ns * C);
  });
}

// The FFN of ln_2's output a.ln2 (N, C) into tmp_ (N, C), this rank's part before the TP
// reduction: the dense MLP, or the mixture of experts.
template <class Be>
void ChunkT<Be>::mlp_forward(const LayerWeightsT<wt>& w, const Acts& a, Ctx& x, double* aux_acc) {
  const int64_t N = d_.N, C = d_.C;
  if (w.moe()) {
    if constexpr (backend_runs_moe<Be>())
      moe_->forward(tmp_, a.ln2, w, moe_->layout(a.moe), x.be, x.comm, x.groups, aux_acc);
    return;
  }
  matmul(a.fch, a.ln2, w.fcw, w.fcb, C, d_.fc_out, x, "matmul_fc");
  x.be.time(d_.swiglu ? "swiglu" : "gelu", 8.0 * static_cast<double>(N * d_.F),
            std::to_string(N * d_.F), [&] {
              if (d_.swiglu)
                x.be.swiglu_forward(a.fch_act, a.fch, N, d_.F);
              else
                x.be.gelu_forward(a.fch_act, a.fch, N * d_.F);
            });
  matmul(tmp_, a.fch_act, w.fcprojw, nullptr, d_.F, C, x, "matmul_fc_proj");
}

template <class Be>
const typename Be::act* ChunkT<Be>::mlp_backward(const LayerWeightsT<wt>& w, const LayerWeightsT<float>& g,
                                                 const Acts& a, const act* dres, Ctx& x) {
  const int64_t N = d_.N, C = d_.C;
  const act* dfull = gathered_grad(dres, x, "tp_all_gather_fc_proj_backward");
  if (w.moe()) {
    act* dpart = nullptr;
    if constexpr (backend_runs_moe<Be>()) {
      x.be.zero(dln_, N * C);
      const MoeActs m = moe_->layout(a.moe);
      moe_->backward_experts(dln_, dfull, a.ln2, w, g, m, x.be, x.comm, x.groups);
      dpart = scatter_rows(dln_, x, "tp_all_reduce_fc_backward");
      moe_->backward_router(dpart, a.ln2, w, g, x.be);
    }
    return dpart;
  }
  x.be.zero(dfch_act_, N * d_.F);
  matmul_back(dfch_act_, g.fcprojw, nullptr, dfull, a.fch_act, w.fcprojw, d_.F, C, x,
              "matmul_fc_proj_backward");
  x.be.zero(dfch_, N * d_.fc_out);
  x.be.time(d_.swiglu ? "swiglu_backward" : "gelu_backward", 12.0 * static_cast<double>(N * d_.F),
            std::to_string(N * d_.F), [&] {
              if (d_.swiglu)
                x.be.swiglu_backward(dfch_, a.fch, dfch_act_, N, d_.F);
              else
                x.be.gelu_backward(dfch_, a.fch, dfch_act_, N * d_.F);
            });
  x.be.zero(dln_, N * C);
  matmul_back(dln_, g.fcw, g.fcb, dfch_, a.ln2, w.fcw, C, d_.fc_out, x, "matmul_fc_backward");
  return scatter_rows(dln_, x, "tp_all_reduce_fc_backward");
}

template <class Be>
void ChunkT<Be>::layer_backward(const LayerWeightsT<wt>& w, const LayerWeightsT<float>& g,
                                const Acts& a, act* dres, Ctx& x) {
  const int64_t N = d_.N, Ns = d_.Ns, C = d_.C;
  // MLP branch: dres (Ns, C) is the gradient of out = resid2 + fc_proj.
  if (g.fcprojb)
    x.be.time("bias_backward", static_cast<double>(Ns * C), std::to_string(Ns * C),
              [&] { x.be.bias_backward(g.fcprojb, dres, Ns, C); });
  const act* dpart = mlp_backward(w, g, a, dres, x);
  norm_backward(dres, g.ln2w, g.ln2b, dpart, a.resid2, w.ln2w, a.ln2_mean, a.ln2_rstd, x,
                "ln_2_backward");
  // Attention branch: dres is now the gradient of resid2 = inp + attn_proj.
  if (g.attprojb)
    x.be.time("bias_backward", static_cast<double>(Ns * C), std::to_string(Ns * C),
              [&] { x.be.bias_backward(g.attprojb, dres, Ns, C); });
  const act* dfull = gathered_grad(dres, x, "tp_all_gather_attn_proj_backward");
  x.be.zero(datty_, N * d_.Ct);
  matmul_back(datty_, g.attprojw, nullptr, dfull, a.atty, w.attprojw, d_.Ct, C, x,
              "matmul_attn_proj_backward");
  attention_back(a, x);
  if (d_.rope) rope(dqkv_, x, true);
  x.be.zero(dln_, N * C);
  matmul_back(dln_, g.qkvw, g.qkvb, dqkv_, a.ln1, w.qkvw, C, d_.Wqkv, x, "matmul_qkv_backward");
  dpart = scatter_rows(dln_, x, "tp_all_reduce_qkv_backward");
  norm_backward(dres, g.ln1w, g.ln1b, dpart, a.inp, w.ln1w, a.ln1_mean, a.ln1_rstd, x,
                "ln_1_backward");
}

template <class Be>
void ChunkT<Be>::forward(Stash& s, float dloss, Ctx& x) {
  using chunk_detail::shape2;
  const int64_t N = d_.N, C = d_.C;
  if (first_) {
    x.be.time("embedding", static_cast<double>(N * C), shape2(N, C), [&] {
      x.be.embedding_forward(tmp_, s.tokens, w_.wte, d_.vocab_start, d_.Vl, N, C);
    });
    const act* part = scatter_rows(tmp_, x, "tp_all_reduce_embedding");
    x.be.copy(s.input, part, d_.Ns * C);
    if (d_.learned_pos)
      position_runs(d_.row0, d_.Ns, [&](int64_t i, int64_t n, int64_t pos) {
        x.be.position_forward_rows(s.input + i * C, w_.wpe, pos, n, d_.Tg, C);
      });
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    Acts a = s.layers[l];
    if (s.recomputed[l]) {  // run into the shared working set; keep only the output
      Acts wk = work_;
      wk.inp = a.inp;
      wk.out = a.out;
      layer_forward(w_.layers[l], wk, x, x.aux_acc);
    } else {
      layer_forward(w_.layers[l], a, x, x.aux_acc);
    }
  }
  if (!last_) return;
  norm_forward(s.lnf + d_.row0 * C, s.lnf_mean, s.lnf_rstd, s.output(), w_.lnfw, w_.lnfb, x, "ln_f");
  gather_rows(s.lnf, x, "tp_all_gather_ln_f");
  matmul(s.logits, s.lnf, w_.head, nullptr, C, d_.Vl, x, "matmul_logits");
  if (x.logits_copy) x.be.copy(x.logits_copy, s.logits, N * d_.Vl);
  float* maxes = s.ce;
  float* sums = s.ce + N;  // sums and target are adjacent: one all-reduce
  float* target = s.ce + 2 * N;
  x.be.time("crossentropy", 5.0 * static_cast<double>(N * d_.Vl), shape2(N, d_.Vl), [&] {
    x.be.crossentropy_local_max(maxes, s.logits, N, d_.Vl, d_.vocab_valid);
    x.comm.all_reduce_max(maxes, N, x.groups.tp, Stream::tp, "tp_all_reduce_ce_max");
    x.be.crossentropy_local_sums(sums, target, s.logits, maxes, s.targets, d_.vocab_start, N,
                                 d_.Vl, d_.vocab_valid);
    x.comm.all_reduce_sum(sums, 2 * N, x.groups.tp, Stream::tp, "tp_all_reduce_ce_sums");
    x.be.crossentropy_finish(s.losses, s.logits, maxes, sums, target, s.targets, d_.vocab_start,
                             dloss, N, d_.Vl, d_.vocab_valid);
  });
  if (x.loss_acc) x.be.add_loss(x.loss_acc, s.losses, N, dloss);
}

template <class Be>
void ChunkT<Be>::backward(Stash& s, act* dres, Ctx& x) {
  using chunk_detail::shape2;
  const int64_t N = d_.N, C = d_.C;
  if (last_) {
    x.be.zero(dln_, N * C);
    matmul_back(dln_, g_.head, nullptr, s.logits, s.lnf, w_.head, C, d_.Vl, x,
                "matmul_logits_backward");
    const act* dpart = scatter_rows(dln_, x, "tp_all_reduce_logits_backward");
    x.be.zero(dres, d_.Ns * C);
    norm_backward(dres, g_.lnfw, g_.lnfb, dpart, s.output(), w_.lnfw, s.lnf_mean, s.lnf_rstd, x,
                  "ln_f_backward");
  }
  for (size_t i = s.layers.size(); i-- > 0;) {
    const Acts& a = s.layers[i];
    if (s.recomputed[i]) {
      Acts wk = work_;
      wk.inp = a.inp;
      layer_forward(w_.layers[i], wk, x, nullptr);  // recompute into the working set (out too)
      layer_backward(w_.layers[i], g_.layers[i], wk, dres, x);
    } else {
      layer_backward(w_.layers[i], g_.layers[i], a, dres, x);
    }
  }
  if (first_) {
    x.be.time("embedding_backward", static_cast<double>(N * C), shape2(N, C), [&] {
      if (d_.learned_pos)
        position_runs(d_.row0, d_.Ns, [&](int64_t i, int64_t n, int64_t pos) {
          x.be.position_backward_rows(g_.wpe, dres + i * C, pos, n, d_.Tg, C);
        });
    });
    const act* dfull = gathered_grad(dres, x, "tp_all_gather_embedding_backward");
    x.be.time("embedding_backward", 0.0, "", [&] {
      x.be.embedding_backward(g_.wte, dfull, s.tokens, d_.vocab_start, d_.Vl, N, C);
    });
  }
}

}  // namespace parallax::exec
