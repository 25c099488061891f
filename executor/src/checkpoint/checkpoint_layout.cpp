#include "parallax/executor/checkpoint/checkpoint_layout.hpp"

#include <stdexcept>

#include "parallax/core/error.hpp"
#include "shape_text.hpp"

namespace parallax::exec {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Executor module name (after "h.N.") -> its HF Llama name(s), one per part of a fused tensor.
struct ModuleName {
  const char* executor;
  std::vector<const char*> llama;
};
const std::vector<ModuleName>& layer_modules() {
  static const std::vector<ModuleName> modules = {
      {"ln_1", {"input_layernorm"}},
      {"attn.c_attn", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
      {"attn.c_proj", {"self_attn.o_proj"}},
      {"ln_2", {"post_attention_layernorm"}},
      {"mlp.c_fc", {"mlp.gate_proj", "mlp.up_proj"}},
      {"mlp.c_proj", {"mlp.down_proj"}},
      // Mixtures of experts, under DeepSeek-V3's names; # is the expert's index.
      {"mlp.router", {"mlp.gate"}},
      {"mlp.experts.#.c_fc", {"mlp.experts.#.gate_proj", "mlp.experts.#.up_proj"}},
      {"mlp.experts.#.c_proj", {"mlp.experts.#.down_proj"}},
      {"mlp.shared_experts.c_fc", {"mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj"}},
      {"mlp.shared_experts.c_proj", {"mlp.shared_experts.down_proj"}},
  };
  return modules;
}

// An expert's index in a layer module name: "mlp.experts.12.c_fc.weight" becomes
// "mlp.experts.#.c_fc.weight" and returns "12"; any other name is left alone ("" returned).
std::string take_expert_index(std::string& rest) {
  const std::string head = "mlp.experts.";
  if (rest.rfind(head, 0) != 0) return "";
  const size_t dot = rest.find('.', head.size());
  if (dot == std::string::npos || dot == head.size()) return "";
  const std::string index = rest.substr(head.size(), dot - head.size());
  if (index.find_first_not_of("0123456789") != std::string::npos) return "";
  rest = head + "#" + rest.substr(dot);
  return index;
}

// `name` with its "#" (if any) replaced by the expert index.
std::string put_expert_index(std::string name, const std::string& index) {
  if (const size_t at = name.find('#'); at != std::string::npos) name.replace(at, 1, index);
  return name;
}
const std::vector<std::pair<const char*, const char*>>& outer_modules() {
  static const std::vector<std::pair<const char*, const char*>> modules = {
      {"wte", "model.embed_tokens"}, {"wpe", "model.embed_positions"}, {"ln_f", "model.norm"},
      {"lm_head", "lm_head"}};
  return modules;
}

// "weight" or "bias" at the end of `name` after `module` + "."; empty when it is not there.
std::string leaf_after(const std::string& name, const std::string& module) {
  if (name.size() <= module.size() + 1 || name.compare(0, module.size(), module) != 0 || name[module.size()] != '.')
    return "";
  const std::string leaf = name.substr(module.size() + 1);
  return leaf == "weight" || leaf == "bias" ? leaf : "";
}

// The HF Llama names of executor tensor `name` with `parts` parts (one name unless fused;
// a GeLU MLP's unfused c_fc is up_proj).
std::vector<std::string> llama_names(const std::string& name, size_t parts) {
  for (const auto& [ours, theirs] : outer_modules())
    if (const std::string leaf = leaf_after(name, ours); !leaf.empty()) return {std::string(theirs) + "." + leaf};
  if (name.rfind("h.", 0) == 0) {
    const size_t dot = name.find('.', 2);
    if (dot != std::string::npos) {
      const std::string layer = name.substr(2, dot - 2);
      std::string rest = name.substr(dot + 1);
      const std::string expert = take_expert_index(rest);
      for (const auto& m : layer_modules()) {
        const std::string leaf = leaf_after(rest, m.executor);
        if (leaf.empty()) continue;
        std::vector<const char*> names = m.llama;
        if (names.size() == 2 && parts == 1) names = {names[1]};  // mlp.c_fc of a GeLU MLP: up only
        if (names.size() != parts)
          throw std::logic_error("checkpoint layout: " + name + " has " + std::to_string(parts) + " parts");
        std::vector<std::string> out;
        for (const char* n : names)
          out.push_back("model.layers." + layer + "." + put_expert_index(n, expert) + "." + leaf);
        return out;
      }
    }
  }
  throw std::logic_error("checkpoint layout: no Hugging Face Llama name for " + name);
}

// The executor name and part index of a stored HF Llama name (without optimizer prefix); false
// when `name` is not one.
bool executor_name(const std::string& name, std::string& ours, size_t& part) {
  part = 0;
  for (const auto& [exec_module, theirs] : outer_modules())
    if (const std::string leaf = leaf_after(name, theirs); !leaf.empty()) {
      ours = std::string(exec_module) + "." + leaf;
      return true;
    }
  const std::string head = "model.layers.";
  if (name.rfind(head, 0) != 0) return false;
  const size_t dot = name.find('.', head.size());
  if (dot == std::string::npos || dot == head.size()) return false;
  const std::string layer = name.substr(head.size(), dot - head.size());
  if (layer.find_first_not_of("0123456789") != std::string::npos) return false;
  std::string rest = name.substr(dot + 1);
  const std::string expert = take_expert_index(rest);
  for (const auto& m : layer_modules())
    for (size_t i = 0; i < m.llama.size(); ++i)
      if (const std::string leaf = leaf_after(rest, m.llama[i]); !leaf.empty()) {
        ours = "h." + layer + "." + put_expert_index(m.executor, expert) + "." + leaf;
        part = i;
        return true;
      }
  return false;
}

// The fused QKV and every SwiGLU MLP's gate | up (the dense one, an expert's, the shared experts').
bool fused(const std::string& name) {
  return ends_with(name, "attn.c_attn.weight") || ends_with(name, "attn.c_attn.bias") ||
         ends_with(name, ".c_fc.weight") || ends_with(name, ".c_fc.bias");
}

// One part of a fused tensor shard: rows [local_start, +length) of the local tensor are rows
// [start, +length) of the part, whose global size is `size`.
struct PartPiece {
  int64_t start = 0, local_start = 0, length = 0, size = 0;
};

// Every part is split evenly over the tp ranks (param_table.hpp), so a part's global size is its
// piece times tp = global rows / local rows.
std::vector<PartPiece> part_pieces(const ParamTensor& t) {
  if (t.shard_dim != 0 || t.segments.empty() || t.local_shape[0] == 0)
    throw std::logic_error("checkpoint layout: " + t.name + " is not a fused tensor sharded by parts");
  const int64_t tp = t.global_shape[0] / t.local_shape[0];
  std::vector<PartPiece> out;
  int64_t offset = 0;
  for (const auto& s : t.segments) {
    const int64_t size = s.length * tp;
    out.push_back({s.global_start - offset, s.local_start, s.length, size});
    offset += size;
  }
  if (offset != t.global_shape[0]) throw std::logic_error("checkpoint layout: the parts of " + t.name + " do not add up");
  return out;
}

void transpose_2d(GlobalTensor& g) {
  const int64_t rows = g.shape[0], cols = g.shape[1];
  std::vector<float> out(g.data.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      out[static_cast<size_t>(k * rows + r)] = g.data[static_cast<size_t>(r * cols + k)];
  g.data = std::move(out);
  g.shape = {cols, rows};
}

using detail::shape_text;

std::string optimizer_prefix(const std::string& name) {
  for (const char* p : {"optimizer.m.", "optimizer.v."})
    if (name.rfind(p, 0) == 0) return p;
  return "";
}

}  // namespace

bool hf_llama_layout(const ModelSpec& m) {
  return m.position == Position::rope || m.norm == Norm::rmsnorm || m.activation == Activation::swiglu;
}

bool hf_conv1d_weight(const std::string& name) {
  for (const char* s : {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"})
    if (ends_with(name, s)) return true;
  return false;
}

std::vector<ShardEntry> stored_entries(const ParamTensor& t, const std::string& prefix, const float* data,
                                       bool llama_layout) {
  if (!llama_layout) {
    ShardEntry e;
    e.shard = t;
    e.shard.name = prefix + t.name;
    e.data.assign(data, data + t.numel());
    if (hf_conv1d_weight(t.name)) {
      const int64_t rows = t.local_shape[0], cols = t.local_shape[1];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) e.data[static_cast<size_t>(k * rows + r)] = data[r * cols + k];
      e.shard.local_shape = {cols, rows};
      e.shard.global_shape = {t.global_shape[1], t.global_shape[0]};
      if (t.shard_dim >= 0) e.shard.shard_dim = 1 - t.shard_dim;
    }
    std::vector<ShardEntry> out;
    out.push_back(std::move(e));
    return out;
  }
  if (!fused(t.name)) {
    ShardEntry e;
    e.shard = t;
    e.shard.name = prefix + llama_names(t.name, 1).front();
    e.data.assign(data, data + t.numel());
    std::vector<ShardEntry> out;
    out.push_back(std::move(e));
    return out;
  }
  const auto pieces = part_pieces(t);
  const auto names = llama_names(t.name, pieces.size());
  const int64_t cols = t.local_shape.size() == 2 ? t.local_shape[1] : 1;
  std::vector<ShardEntry> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const PartPiece& p = pieces[i];
    ShardEntry e;
    e.shard = t;
    e.shard.name = prefix + names[i];
    e.shard.global_shape[0] = p.size;
    e.shard.local_shape[0] = p.length;
    e.shard.segments = {{p.start, 0, p.length}};
    e.data.assign(data + p.local_start * cols, data + (p.local_start + p.length) * cols);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<StoredTensor> stored_tensors(const ParamTensor& global, bool llama_layout) {
  if (!llama_layout) {
    std::vector<int64_t> shape = global.global_shape;
    if (hf_conv1d_weight(global.name)) std::swap(shape[0], shape[1]);
    return {{global.name, shape, global.valid_rows}};
  }
  if (!fused(global.name)) return {{llama_names(global.name, 1).front(), global.global_shape, global.valid_rows}};
  const auto pieces = part_pieces(global);
  const auto names = llama_names(global.name, pieces.size());
  std::vector<StoredTensor> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::vector<int64_t> shape = global.global_shape;
    shape[0] = pieces[i].size;
    out.push_back({names[i], shape, 0});
  }
  return out;
}

std::map<std::string, GlobalTensor> to_executor_layout(std::map<std::string, GlobalTensor> stored,
                                                       const std::string& where) {
  std::map<std::string, GlobalTensor> out;
  // Parts of fused tensors by executor name: part index -> (stored name, tensor).
  std::map<std::string, std::map<size_t, std::pair<std::string, GlobalTensor>>> parts;
  for (auto& [name, g] : stored) {
    const std::string prefix = optimizer_prefix(name);
    const std::string base = name.substr(prefix.size());
    std::string ours;
    size_t part = 0;
    if (executor_name(base, ours, part)) {
      if (fused(ours))
        parts[prefix + ours][part] = {name, std::move(g)};
      else
        out[prefix + ours] = std::move(g);
      continue;
    }
    if (hf_conv1d_weight(base)) {
      if (g.shape.size() != 2) throw InputError(where, name, "a Conv1D weight must have 2 dimensions");
      transpose_2d(g);
    }
    out[name] = std::move(g);
  }
  for (auto& [ours, held] : parts) {
    const bool attn = ours.find("attn.c_attn.") != std::string::npos;
    // SwiGLU's gate | up, or a GeLU MLP's up_proj alone (stored as part 1).
    const std::vector<size_t> want = attn ? std::vector<size_t>{0, 1, 2}
                                          : held.count(0) ? std::vector<size_t>{0, 1} : std::vector<size_t>{1};
    const std::string first = held.begin()->second.first;
    GlobalTensor joined;
    for (size_t i : want) {
      const auto it = held.find(i);
      if (it == held.end()) {
        const auto names = llama_names(ours.substr(optimizer_prefix(ours).size()), attn ? 3 : 2);
        throw InputError(where, optimizer_prefix(ours) + names[i],
                         "tensor missing from the checkpoint (" + first + " is there)");
      }
      const auto& [name, g] = it->second;
      if (g.shape.empty() || g.shape.size() > 2 ||
          (!joined.shape.empty() && (g.shape.size() != joined.shape.size() ||
                                     (g.shape.size() == 2 && g.shape[1] != joined.shape[1]))))
        throw InputError(where, name, "shape " + shape_text(g.shape) + " cannot be joined with " + first + "'s " +
                                          shape_text(held.begin()->second.second.shape));
      if (joined.shape.empty())
        joined.shape = g.shape;
      else
        joined.shape[0] += g.shape[0];
      joined.data.insert(joined.data.end(), g.data.begin(), g.data.end());
      joined.filled.insert(joined.filled.end(), g.filled.begin(), g.filled.end());
    }
    out[ours] = std::move(joined);
  }
  return out;
}

}  // namespace parallax::exec
