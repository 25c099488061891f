#pragma once
// One model stage (a "chunk" of a pipeline rank) on one tensor-parallel rank: its slice of the
// parameter table, and forward/backward of one micro-batch as a straight list of kernel calls
// with Megatron-LM's conjugate TP communication (column-parallel: identity forward, all-reduce
// backward; row-parallel: all-reduce forward, identity backward).
//
// The chunk is written once for every backend (executor/src/layers/chunk_impl.hpp, a template over
// the backend, docs/design.md §8): the backend supplies the element types (cpu: fp32 everywhere;
// cuda: bf16 weights and activations, fp32 statistics and weight gradients), the buffers, the
// ops and their timing, and its Comm (MPI or NCCL).
#include <cstdint>
#include <memory>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/param_table.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/executor/comm/comm.hpp"

namespace parallax::exec {

struct Dims {
  // T: the sequence rows this rank holds, Tg / cp; N = B T.
  int64_t B = 0, T = 0, N = 0, C = 0;
  // Context parallelism: the sequence of Tg tokens is cut into 2 cp chunks of T / 2 and rank
  // cp_rank holds chunks cp_rank and 2 cp - 1 - cp_rank, in that order (causal load balance).
  int64_t Tg = 0, cp = 1, cp_rank = 0;
  int64_t NH = 0;      // local query heads
  int64_t KVH = 0;     // local key/value heads (NH without grouped-query attention)
  int64_t hd = 0;      // head dimension
  int64_t Ct = 0;      // local attention width (NH * head_dim)
  int64_t Wqkv = 0;    // local fused QKV width: q (Ct) | k (KVH hd) | v (KVH hd)
  int64_t F = 0;       // local FFN width after the activation
  int64_t fc_out = 0;  // local FC1 rows (2F with SwiGLU)
  int64_t Vl = 0;      // local vocabulary rows (padded)
  int64_t vocab_start = 0, vocab_valid = 0;  // global first row; real (unpadded) local rows
  bool layernorm = true, swiglu = false, learned_pos = true, rope = false;
  // Fused attention (the job's attention "fused"): the blocked online-softmax kernel, which keeps
  // each row's log-sum-exp instead of the (B, NH, T, T) probabilities.
  bool flash = false;
  // Sequence parallelism: outside the TP regions (norms, residuals, p2p) a rank holds Ns = N/tp
  // consecutive rows of the flattened (B*T) sequence, starting at row0. Without it Ns = N, row0 = 0.
  bool sp = false;
  int64_t Ns = 0, row0 = 0;
};

Dims chunk_dims(const ModelSpec& m, const PlanSpec& p, int64_t tp_rank, int64_t cp_rank,
                bool flash_attention);

// The sequence position of each of the T = Tg / cp rows context-parallel rank `rank` holds.
std::vector<int64_t> cp_positions(int64_t Tg, int64_t cp, int64_t rank);

// W: the weights' element type as the kernels read them; gradients use LayerWeightsT<float>.
template <class W>
struct LayerWeightsT {
  W *ln1w = nullptr, *ln1b = nullptr, *qkvw = nullptr, *qkvb = nullptr;
  W *attprojw = nullptr, *attprojb = nullptr, *ln2w = nullptr, *ln2b = nullptr;
  W *fcw = nullptr, *fcb = nullptr, *fcprojw = nullptr, *fcprojb = nullptr;
  // A mixture-of-experts layer instead of fcw/fcprojw (param_table.hpp): the router (E, C), each
  // expert's c_fc (2 Fe, C) and c_proj (C, Fe), the shared experts' (null without them).
  W* router = nullptr;
  std::vector<W*> expert_fc, expert_proj;
  W *shared_fc = nullptr, *shared_proj = nullptr;
  bool moe() const { return router != nullptr; }
};

template <class W>
struct ChunkWeightsT {
  W *wte = nullptr, *wpe = nullptr, *lnfw = nullptr, *lnfb = nullptr, *head = nullptr;
  std::vector<LayerWeightsT<W>> layers;
};

// A: the activations' element type. (Ns, C): rows this rank holds (all rows without sequence
// parallelism); ln1, ln2 and lnf are kept gathered, (N, C), since the column-parallel GEMMs
// need them. Statistics are fp32 whatever A is.
template <class A>
struct LayerActsT {
  A* inp = nullptr;  // (Ns, C) the layer's input (previous layer's out or the chunk input)
  A* ln1 = nullptr;  // (N, C)
  float *ln1_mean = nullptr, *ln1_rstd = nullptr;  // (Ns) (Ns)
  A* qkv = nullptr;     // (N, Wqkv), q and k rotated when rope
  A* att = nullptr;     // (B, NH, T, T) unfused attention without selective recompute
  float* lse = nullptr;  // (B, NH, T) fused attention: each row's log-sum-exp
  A* atty = nullptr;    // (N, Ct)
  A* resid2 = nullptr;  // (Ns, C)
  A* ln2 = nullptr;
  float *ln2_mean = nullptr, *ln2_rstd = nullptr;
  A* fch = nullptr;      // (N, fc_out)
  A* fch_act = nullptr;  // (N, F)
  A* moe = nullptr;      // a mixture-of-experts layer's activations instead of fch (MoeLayer)
  A* out = nullptr;      // (Ns, C)
};

}  // namespace parallax::exec
