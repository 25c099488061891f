// The chunk's dimensions, and the CPU backend's instantiation of the chunk (chunk_impl.hpp).
#include <algorithm>

#include "backend_cpu.hpp"
#include "chunk_impl.hpp"

namespace parallax::exec {

Dims chunk_dims(const ModelSpec& m, const PlanSpec& p, int64_t tp_rank, int64_t cp_rank,
                bool flash_attention) {
  Dims d;
  d.B = p.micro_batch;
  d.Tg = m.seq_len;
  d.cp = p.cp;
  d.cp_rank = cp_rank;
  d.T = m.seq_len / p.cp;
  d.N = d.B * d.T;
  d.C = m.hidden;
  d.NH = m.heads / p.tp;
  d.KVH = m.kv_head_count() / p.tp;
  d.hd = m.head_dim();
  d.Ct = d.NH * d.hd;
  d.Wqkv = d.Ct + 2 * d.KVH * d.hd;
  d.F = m.ffn_hidden / p.tp;
  d.swiglu = m.activation == Activation::swiglu;
  d.fc_out = d.swiglu ? 2 * d.F : d.F;
  d.Vl = vocab_padded(m.vocab, p.tp) / p.tp;
  d.vocab_start = tp_rank * d.Vl;
  d.vocab_valid = std::clamp<int64_t>(m.vocab - d.vocab_start, 0, d.Vl);
  d.layernorm = m.norm == Norm::layernorm;
  d.learned_pos = m.position == Position::learned;
  d.rope = m.position == Position::rope;
  d.flash = flash_attention;
  d.sp = p.sequence_parallel && p.tp > 1;
  d.Ns = d.sp ? d.N / p.tp : d.N;
  d.row0 = d.sp ? tp_rank * d.Ns : 0;
  return d;
}

std::vector<int64_t> cp_positions(int64_t Tg, int64_t cp, int64_t rank) {
  std::vector<int64_t> pos;
  if (cp == 1) {  // the whole sequence, whatever its parity
    for (int64_t t = 0; t < Tg; ++t) pos.push_back(t);
    return pos;
  }
  const int64_t c = Tg / (2 * cp);
  for (const int64_t chunk : {rank, 2 * cp - 1 - rank})
    for (int64_t t = 0; t < c; ++t) pos.push_back(chunk * c + t);
  return pos;
}

template class ChunkT<CpuBackend>;

}  // namespace parallax::exec
