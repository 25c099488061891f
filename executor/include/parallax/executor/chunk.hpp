#pragma once
// One model stage (a "chunk" of a pipeline rank) on one tensor-parallel rank: its slice of the
// parameter table, and forward/backward of one micro-batch as a straight list of kernel calls
// with Megatron-LM's conjugate TP communication (column-parallel: identity forward, all-reduce
// backward; row-parallel: all-reduce forward, identity backward).
#include <cstdint>
#include <vector>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/param_table.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/executor/comm.hpp"

namespace parallax::exec {

struct Dims {
  int64_t B = 0, T = 0, N = 0, C = 0;
  int64_t NH = 0;      // local heads
  int64_t Ct = 0;      // local attention width (NH * head_dim)
  int64_t F = 0;       // local FFN width after the activation
  int64_t fc_out = 0;  // local FC1 rows (2F with SwiGLU)
  int64_t Vl = 0;      // local vocabulary rows (padded)
  int64_t vocab_start = 0, vocab_valid = 0;  // global first row; real (unpadded) local rows
  bool layernorm = true, swiglu = false, learned_pos = true;
  // Sequence parallelism: outside the TP regions (norms, residuals, p2p) a rank holds Ns = N/tp
  // consecutive rows of the flattened (B*T) sequence, starting at row0. Without it Ns = N, row0 = 0.
  bool sp = false;
  int64_t Ns = 0, row0 = 0;
};

struct LayerWeights {
  float *ln1w = nullptr, *ln1b = nullptr, *qkvw = nullptr, *qkvb = nullptr;
  float *attprojw = nullptr, *attprojb = nullptr, *ln2w = nullptr, *ln2b = nullptr;
  float *fcw = nullptr, *fcb = nullptr, *fcprojw = nullptr, *fcprojb = nullptr;
};

struct ChunkWeights {
  float *wte = nullptr, *wpe = nullptr, *lnfw = nullptr, *lnfb = nullptr, *head = nullptr;
  std::vector<LayerWeights> layers;
};

// (Ns, C): rows this rank holds (all rows without sequence parallelism); ln1, ln2 and lnf are
// kept gathered, (N, C), since the column-parallel GEMMs need them.
struct LayerActs {
  float *inp = nullptr;  // (Ns, C) the layer's input (previous layer's out or the chunk input)
  float *ln1 = nullptr, *ln1_mean = nullptr, *ln1_rstd = nullptr;  // (N,C) (Ns) (Ns)
  float *qkv = nullptr;    // (N, 3Ct)
  float *att = nullptr;    // (B, NH, T, T)
  float *atty = nullptr;   // (N, Ct)
  float *resid2 = nullptr; // (Ns, C)
  float *ln2 = nullptr, *ln2_mean = nullptr, *ln2_rstd = nullptr;
  float *fch = nullptr;     // (N, fc_out)
  float *fch_act = nullptr; // (N, F)
  float *out = nullptr;     // (Ns, C)
};

// What one micro-batch keeps between its forward and backward on this chunk.
struct Stash {
  std::vector<float> data;
  std::vector<int32_t> tokens, targets;  // (N)
  float* input = nullptr;                 // (Ns, C)
  std::vector<LayerActs> layers;          // pointers of recomputed parts are null
  std::vector<bool> recomputed;           // per layer: full recompute
  float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;  // last chunk
  float *logits = nullptr;                // (N, Vl); overwritten by dlogits
  float *losses = nullptr, *ce = nullptr; // (N), (3N)
  float* output() const { return layers.back().out; }
};

struct ExecContext {
  Comm& comm;
  Recorder& rec;
  const ProcessGroups& groups;
  float* logits_copy = nullptr;  // when set, the last chunk copies its logits (N, Vl) here
};

class Chunk {
 public:
  Chunk(const ModelSpec& m, const PlanSpec& p, int64_t stage, int64_t tp_rank, int64_t offset);

  const std::vector<ParamTensor>& table() const { return table_; }
  int64_t stage() const { return stage_; }
  bool first() const { return first_; }
  bool last() const { return last_; }
  const Dims& dims() const { return d_; }
  int64_t numel() const { return total_numel(table_); }

  void bind(float* params, float* grads);
  std::unique_ptr<Stash> make_stash() const;

  // Forward of one micro-batch. First chunk: embeds stash.tokens; otherwise stash.input holds
  // the received activations. Last chunk: returns the sum of this micro-batch's token losses
  // times dloss and leaves dlogits in the stash; otherwise 0.
  double forward(Stash& s, float dloss, ExecContext& x);
  // Backward. Last chunk: from the stash's dlogits; otherwise dres (Ns, C) holds the gradient of
  // the chunk output. Leaves the gradient of the chunk input in dres.
  void backward(Stash& s, float* dres, ExecContext& x);

 private:
  void layer_forward(const LayerWeights& w, const LayerActs& a, ExecContext& x);
  void layer_backward(const LayerWeights& w, const LayerWeights& g, const LayerActs& a,
                      float* dres, ExecContext& x);
  // Sequence parallelism's conjugate pair (plain TP without it): the own rows of `full` are
  // all-gathered (no-op without SP) / `full` (N, C) partial sums are reduce-scattered to the own
  // rows (all-reduced without SP); returns the rows this rank holds.
  void gather_rows(float* full, ExecContext& x, const char* name);
  float* scatter_rows(float* full, ExecContext& x, const char* name);
  // dres (Ns, C) gathered into dres_full_ (N, C); without SP dres itself.
  const float* gathered_grad(const float* dres, ExecContext& x, const char* name);
  void norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                    const float* b, ExecContext& x, const char* name);
  void norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                     const float* w, const float* mean, const float* rstd, ExecContext& x,
                     const char* name);
  void matmul(float* out, const float* inp, const float* w, const float* b, int64_t C,
              int64_t OC, ExecContext& x, const char* name);
  void matmul_back(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                   const float* w, int64_t C, int64_t OC, ExecContext& x, const char* name);
  LayerActs layout_layer(float*& cursor, bool full) const;

  ModelSpec m_;
  PlanSpec p_;
  int64_t stage_ = 0;
  bool first_ = false, last_ = false;
  int64_t first_layer_ = 0;
  Dims d_;
  std::vector<ParamTensor> table_;
  ChunkWeights w_, g_;
  // Scratch shared by the micro-batches: recompute working set and backward temporaries.
  std::vector<float> scratch_;
  LayerActs work_;  // full layer activations for recomputation
  float *tmp_ = nullptr, *dln_ = nullptr, *dqkv_ = nullptr, *datty_ = nullptr;
  float *dfch_ = nullptr, *dfch_act_ = nullptr, *att_scratch_ = nullptr, *atty_scratch_ = nullptr;
  float* dres_full_ = nullptr;
};

}  // namespace parallax::exec
