#include "parallax/core/param_table.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace parallax {

const char* to_string(ParamFamily f) {
  switch (f) {
    case ParamFamily::word_embedding: return "word_embedding";
    case ParamFamily::position_embedding: return "position_embedding";
    case ParamFamily::layer: return "layer";
    case ParamFamily::final_norm: return "final_norm";
    case ParamFamily::output: return "output";
  }
  return "?";
}

int64_t ParamTensor::numel() const {
  return std::accumulate(local_shape.begin(), local_shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

int64_t vocab_padded(int64_t vocab, int64_t tp) {
  const int64_t multiple = 128 * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

int64_t layers_per_stage(const ModelSpec& m, const PlanSpec& p) {
  return m.layers / (p.pp * p.vpp);
}

namespace {

class TableBuilder {
 public:
  TableBuilder(int64_t tp, int64_t tp_rank, int64_t offset)
      : tp_(tp), r_(tp_rank), offset_(offset) {}

  ParamTensor& replicated(std::string name, ParamFamily f, std::vector<int64_t> shape,
                          ParamInit init) {
    ParamTensor t;
    t.name = std::move(name);
    t.family = f;
    t.global_shape = shape;
    t.local_shape = shape;
    t.init = init;
    return add(std::move(t));
  }

  // Sharded over tp along `dim`, the dimension made of `parts` equal parts (2 for SwiGLU's [a | b]).
  ParamTensor& sharded(std::string name, ParamFamily f, std::vector<int64_t> shape, int dim,
                       int64_t parts, ParamInit init) {
    const int64_t part = shape[static_cast<size_t>(dim)] / parts;
    return sharded_parts(std::move(name), f, std::move(shape), dim,
                         std::vector<int64_t>(static_cast<size_t>(parts), part), init);
  }

  // Sharded over tp along `dim`, the dimension made of parts of the given sizes, each split
  // evenly over the tp ranks (QKV: q, k and v, of unequal sizes with grouped-query attention).
  ParamTensor& sharded_parts(std::string name, ParamFamily f, std::vector<int64_t> shape, int dim,
                             const std::vector<int64_t>& part_sizes, ParamInit init) {
    ParamTensor t;
    t.name = std::move(name);
    t.family = f;
    t.global_shape = shape;
    t.local_shape = shape;
    int64_t global = 0, local = 0;
    for (const int64_t part : part_sizes) {
      const int64_t piece = part / tp_;
      t.segments.push_back({global + r_ * piece, local, piece});
      global += part;
      local += piece;
    }
    t.local_shape[static_cast<size_t>(dim)] = local;
    t.shard_dim = dim;
    t.init = init;
    return add(std::move(t));
  }

  std::vector<ParamTensor> take() { return std::move(table_); }
  size_t size() const { return table_.size(); }
  // Marks the tensors added since index `from` as a routed expert's.
  void mark_expert(size_t from) {
    for (size_t i = from; i < table_.size(); ++i) table_[i].expert = true;
  }

 private:
  ParamTensor& add(ParamTensor t) {
    t.offset = offset_;
    t.weight_decay = t.global_shape.size() == 2;
    offset_ += t.numel();
    table_.push_back(std::move(t));
    return table_.back();
  }

  int64_t tp_, r_, offset_;
  std::vector<ParamTensor> table_;
};

void check_table_arguments(const ModelSpec& m, const PlanSpec& p, int64_t stage, int64_t ep_rank) {
  if (stage < 0 || stage >= p.pp * p.vpp) throw std::out_of_range("stage_param_table: stage");
  const int64_t ep = std::max<int64_t>(p.ep, 1);
  if (ep_rank < 0 || ep_rank >= ep) throw std::out_of_range("stage_param_table: ep_rank");
  if (m.is_moe() && m.moe.num_experts % ep != 0)
    throw std::invalid_argument("stage_param_table: ep must divide the experts");
  const int64_t kv = m.kv_head_count();
  if (m.heads % kv != 0 || kv % p.tp != 0)
    throw std::invalid_argument("stage_param_table: kv_heads must divide heads and be divisible by tp");
}

}  // namespace

std::vector<ParamTensor> stage_param_table(const ModelSpec& m, const PlanSpec& p, int64_t stage,
                                           int64_t tp_rank, int64_t first_offset,
                                           int64_t ep_rank) {
  check_table_arguments(m, p, stage, ep_rank);
  const int64_t stages = p.pp * p.vpp;
  const int64_t ep = std::max<int64_t>(p.ep, 1);
  const int64_t C = m.hidden;
  const int64_t hd = m.head_dim();
  const int64_t kv = m.kv_head_count();
  const std::vector<int64_t> qkv_parts = {m.heads * hd, kv * hd, kv * hd};
  const int64_t qkv_rows = (m.heads + 2 * kv) * hd;
  const bool bias = m.linear_bias;
  const int64_t F = m.ffn_hidden;
  const int64_t fc_parts = m.activation == Activation::swiglu ? 2 : 1;
  const int64_t Vp = vocab_padded(m.vocab, p.tp);
  const bool ln = m.norm == Norm::layernorm;
  TableBuilder b(p.tp, tp_rank, first_offset);

  auto word_embedding = [&](const std::string& name, ParamFamily f, bool tied_copy) {
    ParamTensor& t = b.sharded(name, f, {Vp, C}, 0, 1, ParamInit::normal);
    t.valid_rows = m.vocab;
    t.tied_copy = tied_copy;
  };
  auto norm = [&](const std::string& prefix, ParamFamily f, int64_t layer) {
    b.replicated(prefix + ".weight", f, {C}, ParamInit::ones).layer = layer;
    if (ln) b.replicated(prefix + ".bias", f, {C}, ParamInit::zeros).layer = layer;
  };

  if (stage == 0) {
    word_embedding("wte.weight", ParamFamily::word_embedding, false);
    if (m.position == Position::learned)
      b.replicated("wpe.weight", ParamFamily::position_embedding, {m.seq_len, C},
                   ParamInit::normal);
  }
  const int64_t per = layers_per_stage(m, p);
  for (int64_t l = stage * per; l < (stage + 1) * per; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    const auto L = ParamFamily::layer;
    norm(h + "ln_1", L, l);
    b.sharded_parts(h + "attn.c_attn.weight", L, {qkv_rows, C}, 0, qkv_parts, ParamInit::normal)
        .layer = l;
    if (bias)
      b.sharded_parts(h + "attn.c_attn.bias", L, {qkv_rows}, 0, qkv_parts, ParamInit::zeros).layer = l;
    b.sharded(h + "attn.c_proj.weight", L, {C, m.heads * hd}, 1, 1, ParamInit::normal_residual)
        .layer = l;
    if (bias) b.replicated(h + "attn.c_proj.bias", L, {C}, ParamInit::zeros).layer = l;
    norm(h + "ln_2", L, l);
    // An MLP of width `width` under `prefix` (the dense FFN, each expert, the shared experts).
    auto mlp = [&](const std::string& prefix, int64_t width) {
      b.sharded(prefix + "c_fc.weight", L, {fc_parts * width, C}, 0, fc_parts, ParamInit::normal)
          .layer = l;
      if (bias)
        b.sharded(prefix + "c_fc.bias", L, {fc_parts * width}, 0, fc_parts, ParamInit::zeros).layer = l;
      b.sharded(prefix + "c_proj.weight", L, {C, width}, 1, 1, ParamInit::normal_residual).layer = l;
      if (bias) b.replicated(prefix + "c_proj.bias", L, {C}, ParamInit::zeros).layer = l;
    };
    if (!m.is_moe_layer(l)) {
      mlp(h + "mlp.", F);
      continue;
    }
    const MoeSpec& e = m.moe;
    b.replicated(h + "mlp.router.weight", L, {e.num_experts, C}, ParamInit::normal).layer = l;
    const int64_t local = e.num_experts / ep;
    for (int64_t x = ep_rank * local; x < (ep_rank + 1) * local; ++x) {
      const size_t from = b.size();
      mlp(h + "mlp.experts." + std::to_string(x) + ".", e.expert_ffn_hidden);
      b.mark_expert(from);
    }
    if (e.shared_experts > 0)
      mlp(h + "mlp.shared_experts.", e.shared_experts * e.shared_expert_ffn_hidden);
  }
  if (stage == stages - 1) {
    norm("ln_f", ParamFamily::final_norm, -1);
    if (!m.tied_embeddings)
      word_embedding("lm_head.weight", ParamFamily::output, false);
    else if (stages > 1)
      word_embedding("wte.weight", ParamFamily::output, true);
  }
  return b.take();
}

int64_t total_numel(const std::vector<ParamTensor>& table) {
  int64_t n = 0;
  for (const auto& t : table) n += t.numel();
  return n;
}

}  // namespace parallax

namespace parallax {

namespace {
int64_t map_segment(const ParamTensor& t, int64_t local) {
  for (const auto& s : t.segments)
    if (local >= s.local_start && local < s.local_start + s.length)
      return s.global_start + (local - s.local_start);
  throw std::logic_error("param_table: local index outside every segment of " + t.name);
}
}  // namespace

int64_t global_row(const ParamTensor& t, int64_t local_flat) {
  const int64_t cols = t.local_shape.size() == 2 ? t.local_shape[1] : 1;
  const int64_t row = local_flat / cols;
  return t.shard_dim == 0 ? map_segment(t, row) : row;
}

int64_t global_flat_index(const ParamTensor& t, int64_t local_flat) {
  if (t.shard_dim < 0) return local_flat;
  if (t.local_shape.size() == 1) return map_segment(t, local_flat);
  const int64_t cols = t.local_shape[1];
  const int64_t gcols = t.global_shape[1];
  int64_t row = local_flat / cols, col = local_flat % cols;
  if (t.shard_dim == 0)
    row = map_segment(t, row);
  else
    col = map_segment(t, col);
  return row * gcols + col;
}

}  // namespace parallax
