#pragma once
// The chunk's attention (chunk_impl.hpp): rotary embeddings, the context-parallel gathers of K and V
// and their causal reordering, and the attention core forward and backward, fused or not.
// Included at the end of chunk_impl.hpp, after the class it defines members of.
#include <algorithm>
#include <string>

#include "parallax/kernels/cpu.hpp"

namespace parallax::exec {

// Rotary embeddings of q and k inside the fused QKV activation (N, Wqkv), all N rows (row r at
// position r % T); backward turns the gradients of the rotated q and k into those of the
// unrotated ones, in place. 6 flops per rotated pair.
template <class Be>
void ChunkT<Be>::rope(act* qkv, Ctx& x, bool backward) {
  const double flops = 3.0 * static_cast<double>(d_.N * (d_.NH + d_.KVH) * d_.hd);
  x.be.time(backward ? "rope_backward" : "rope", flops, chunk_detail::shape2(d_.N, d_.Ct + d_.KVH * d_.hd), [&] {
    position_runs(0, d_.N, [&](int64_t i, int64_t n, int64_t pos) {
      act* rows = qkv + i * d_.Wqkv;
      if (backward) {
        x.be.rope_backward(rows, n, d_.Wqkv, d_.NH, d_.hd, inv_freq_.data(), pos, d_.Tg);
        x.be.rope_backward(rows + d_.Ct, n, d_.Wqkv, d_.KVH, d_.hd, inv_freq_.data(), pos, d_.Tg);
      } else {
        x.be.rope_forward(rows, n, d_.Wqkv, d_.NH, d_.hd, inv_freq_.data(), pos, d_.Tg);
        x.be.rope_forward(rows + d_.Ct, n, d_.Wqkv, d_.KVH, d_.hd, inv_freq_.data(), pos, d_.Tg);
      }
    });
  });
}

template <class Be>
template <class F>
void ChunkT<Be>::position_runs(int64_t first, int64_t rows, F f) const {
  if (d_.cp == 1) {
    f(0, rows, first);
    return;
  }
  const int64_t half = d_.T / 2;  // one of the rank's two chunks of the sequence
  for (int64_t r = first; r < first + rows;) {
    const int64_t n = std::min(first + rows, (r / half + 1) * half) - r;
    f(r - first, n, q_pos_[static_cast<size_t>(r % d_.T)]);
    r += n;
  }
}

template <class Be>
void ChunkT<Be>::reorder_kv(act* kv, bool to_sequence) {
  const int64_t W2 = 2 * d_.KVH * d_.hd, half = d_.T / 2;
  for (int64_t r = 0; r < d_.cp; ++r) {
    const std::vector<int64_t> pos = cp_positions(d_.Tg, d_.cp, r);
    for (int64_t b = 0; b < d_.B; ++b)
      for (int64_t t = 0; t < d_.T; t += half) {
        act* ranks = kv_ranks_ + ((r * d_.B + b) * d_.T + t) * W2;
        act* seq = kv + (b * d_.Tg + pos[static_cast<size_t>(t)]) * W2;
        if (to_sequence)
          be_.copy(seq, ranks, half * W2);
        else
          be_.copy(ranks, seq, half * W2);
      }
  }
}

template <class Be>
void ChunkT<Be>::gather_kv(const act* qkv, Ctx& x) {
  const int64_t W2 = 2 * d_.KVH * d_.hd;
  act* mine = kv_ranks_ + d_.cp_rank * d_.N * W2;
  for (int64_t n = 0; n < d_.N; ++n) x.be.copy(mine + n * W2, qkv + n * d_.Wqkv + d_.Ct, W2);
  x.comm.all_gather(kv_ranks_, d_.N * W2, x.groups.cp, "cp_all_gather_kv", Stream::tp);
  reorder_kv(kv_, true);
}

template <class Be>
void ChunkT<Be>::scatter_dkv(Ctx& x) {
  const int64_t W2 = 2 * d_.KVH * d_.hd;
  reorder_kv(dkv_, false);
  x.comm.reduce_scatter_sum(kv_ranks_, d_.N * W2, x.groups.cp, "cp_reduce_scatter_dkv", Stream::tp);
  const act* mine = kv_ranks_ + d_.cp_rank * d_.N * W2;
  for (int64_t n = 0; n < d_.N; ++n) x.be.copy(dqkv_ + n * d_.Wqkv + d_.Ct, mine + n * W2, W2);
}

// The attention core, a.qkv -> a.atty. Unfused: the (B, NH, T, T) probabilities into a.att (or
// the scratch under selective recompute), 4 B T^2 Ct flops counted over the whole square as the
// kernel computes it. Fused: the blocked kernel over the causal half, 2 B T^2 Ct, keeping a.lse.
template <class Be>
void ChunkT<Be>::attention(const Acts& a, Ctx& x) {
  const double square = static_cast<double>(d_.B * d_.T * d_.T * d_.Ct);
  const std::string shape = std::to_string(d_.B) + "x" + std::to_string(d_.NH) + "x" + std::to_string(d_.T);
  if constexpr (Be::kFlashAttention) {
    if (d_.cp > 1) {  // this rank's rows against the whole sequence's keys and values
      gather_kv(a.qkv, x);
      const double flops = 4.0 * static_cast<double>(d_.B * d_.Ct * attended_);
      x.be.time("flash_attention", flops, shape, [&] {
        x.be.flash_attention_rows_forward(a.atty, a.lse, flash_rows(a.qkv));
      });
      return;
    }
    if (d_.flash) {
      x.be.time("flash_attention", 2.0 * square, shape, [&] {
        x.be.flash_attention_forward(a.atty, a.lse, a.qkv, d_.B, d_.T, d_.Ct, d_.NH, d_.KVH);
      });
      return;
    }
  }
  x.be.time("attention", 4.0 * square, shape, [&] {
    x.be.attention_forward(a.atty, a.att ? a.att : att_scratch_, a.qkv, d_.B, d_.T, d_.Ct, d_.NH,
                           d_.KVH);
  });
}

// dqkv_ (zeroed here) from datty_. Fused: the scores recomputed inside the kernel from a.lse,
// five products over the causal half (2.5x the forward); unfused: the probabilities kept, or
// recomputed first under selective recompute.
template <class Be>
void ChunkT<Be>::attention_back(const Acts& a, Ctx& x) {
  const double square = static_cast<double>(d_.B * d_.T * d_.T * d_.Ct);
  x.be.zero(dqkv_, d_.N * d_.Wqkv);
  if constexpr (Be::kFlashAttention) {
    if (d_.cp > 1) {  // the keys and values gathered again (not kept), their gradients summed back
      gather_kv(a.qkv, x);
      x.be.zero(dkv_, d_.B * d_.Tg * 2 * d_.KVH * d_.hd);
      const double flops = 10.0 * static_cast<double>(d_.B * d_.Ct * attended_);
      x.be.time("flash_attention_backward", flops, "", [&] {
        x.be.flash_attention_rows_backward(dqkv_, dkv_, dkv_ + d_.KVH * d_.hd, datty_, a.atty, a.lse,
                                           flash_rows(a.qkv));
      });
      scatter_dkv(x);
      return;
    }
    if (d_.flash) {
      x.be.time("flash_attention_backward", 5.0 * square, "", [&] {
        x.be.flash_attention_backward(dqkv_, datty_, a.qkv, a.atty, a.lse, d_.B, d_.T, d_.Ct,
                                      d_.NH, d_.KVH);
      });
      return;
    }
  }
  const act* att = a.att;
  if (!att) {  // selective recompute: the attention scores again, from the kept qkv
    x.be.time("attention_recompute", 4.0 * square, "", [&] {
      x.be.attention_forward(atty_scratch_, att_scratch_, a.qkv, d_.B, d_.T, d_.Ct, d_.NH, d_.KVH);
    });
    att = att_scratch_;
  }
  x.be.time("attention_backward", 8.0 * square, "", [&] {
    x.be.attention_backward(dqkv_, datty_, a.qkv, att, d_.B, d_.T, d_.Ct, d_.NH, d_.KVH);
  });
}

}  // namespace parallax::exec
