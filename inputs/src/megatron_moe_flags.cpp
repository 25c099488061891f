// Megatron-Core's MoE flags (megatron/training/arguments.py, _add_moe_args) as the importer reads
// them; export/src/megatron_moe.cpp writes them.
#include "megatron_moe_flags.hpp"

#include <optional>
#include <sstream>
#include <stdexcept>

#include "parallax/core/error.hpp"

namespace parallax::megatron_moe {
namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& rule) {
  throw InputError("megatron args", flag, rule);
}

double to_number(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used != v.size() || !(x >= 0)) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    refuse(flag, "must be a number >= 0 (got \"" + v + "\")");
  }
}

}  // namespace

bool read_flag(const std::string& a, const std::function<std::string()>& value, Flags& f) {
  const bool moe = a.rfind("--moe-", 0) == 0 || a == "--num-experts" ||
                   a == "--expert-model-parallel-size" || a == "--expert-tensor-parallel-size";
  if (!moe) return false;
  if (a == "--num-experts") f.num_experts = parse_int(a, value());
  else if (a == "--moe-router-topk") f.top_k = parse_int(a, value());
  else if (a == "--moe-ffn-hidden-size") f.expert_ffn_hidden = parse_int(a, value());
  else if (a == "--expert-model-parallel-size") f.ep = parse_int(a, value());
  else if (a == "--expert-tensor-parallel-size") f.etp = parse_int(a, value());
  else if (a == "--moe-shared-expert-intermediate-size") f.shared_ffn_hidden = parse_int(a, value());
  else if (a == "--moe-layer-freq") f.layer_freq = value();
  else if (a == "--moe-router-score-function") f.router = value();
  else if (a == "--moe-router-load-balancing-type") f.load_balancing = value();
  else if (a == "--moe-token-dispatcher-type") f.dispatcher = value();
  else if (a == "--moe-flex-dispatcher-backend") f.flex_backend = value();
  else if (a == "--moe-enable-deepep") f.enable_deepep = true;
  else if (a == "--moe-aux-loss-coeff") f.aux_loss_coeff = to_number(a, value());
  else if (a == "--moe-expert-capacity-factor") f.capacity_factor = to_number(a, value());
  else if (a == "--moe-grouped-gemm" || a == "--moe-permute-fusion" || a == "--moe-router-fusion" ||
           a == "--moe-shared-expert-overlap")
    ;  // kernels and overlaps of the stack, not the plan
  else
    return false;
  f.seen = true;
  return true;
}

std::vector<int> layer_pattern(const std::string& text, int64_t layers) {
  const std::string flag = "--moe-layer-freq";
  std::string s;
  for (char c : text)
    if (c != ' ' && c != '(' && c != ')') s += c;
  if (!s.empty() && s.front() != '[') {
    const int64_t n = parse_int(flag, s);
    if (n < 1) refuse(flag, "must be >= 1 (got " + s + ")");
    std::vector<int> out;
    for (int64_t l = 0; l < layers; ++l) out.push_back(l % n == 0 ? 1 : 0);
    return out;
  }
  // A sum of terms "[a,b,...]" or "[a,b,...]*n".
  std::vector<int> out;
  std::stringstream terms(s);
  std::string term;
  while (std::getline(terms, term, '+')) {
    const size_t close = term.find(']');
    if (term.empty() || term.front() != '[' || close == std::string::npos)
      refuse(flag, "must be an integer or a list such as [0,1,1] or ([0]*3+[1]*58) (got \"" + text + "\")");
    std::vector<int> items;
    std::stringstream list(term.substr(1, close - 1));
    std::string item;
    while (std::getline(list, item, ',')) {
      if (item != "0" && item != "1") refuse(flag, "list items must be 0 or 1 (got \"" + item + "\")");
      items.push_back(item == "1" ? 1 : 0);
    }
    int64_t times = 1;
    if (close + 1 < term.size()) {
      if (term[close + 1] != '*') refuse(flag, "must be a list expression (got \"" + text + "\")");
      times = parse_int(flag, term.substr(close + 2));
    }
    for (int64_t r = 0; r < times; ++r) out.insert(out.end(), items.begin(), items.end());
  }
  if (static_cast<int64_t>(out.size()) != layers)
    refuse(flag, "lists " + std::to_string(out.size()) + " layers; the model has " + std::to_string(layers));
  return out;
}

void apply(const Flags& f, ModelSpec& m, PlanSpec& p) {
  p.ep = f.ep;
  p.etp = f.etp > 0 && f.etp != p.tp ? f.etp : 0;  // Megatron-Core's default is tp: stored as 0
  if (!f.seen || f.num_experts == 0) {
    if (f.ep > 1) refuse("--expert-model-parallel-size", "needs --num-experts");
    return;
  }
  if (f.ep > 1 && f.dispatcher != "alltoall" && f.dispatcher != "flex")
    refuse("--moe-token-dispatcher-type", "Parallax costs the all-to-all token dispatcher (alltoall, or flex "
           "with DeepEP or HybridEP); Megatron-LM's default is allgather (got \"" + f.dispatcher + "\")");
  // Megatron-Core's own rules (transformer_config.py __post_init__): --moe-enable-deepep needs the
  // flex dispatcher and means the deepep backend.
  if (f.enable_deepep && f.dispatcher != "flex")
    refuse("--moe-enable-deepep", "needs --moe-token-dispatcher-type flex (got \"" + f.dispatcher + "\")");
  if (f.enable_deepep && f.flex_backend != "deepep")
    refuse("--moe-enable-deepep", "selects the deepep backend; --moe-flex-dispatcher-backend says \"" +
                                      f.flex_backend + "\"");
  const std::optional<MoeDispatcher> backend = moe_dispatcher_from(f.flex_backend);
  if (f.dispatcher == "flex" && !(backend && deduplicating(*backend)))
    refuse("--moe-flex-dispatcher-backend", "Parallax costs deepep and hybridep (got \"" + f.flex_backend + "\")");
  p.moe_dispatcher = f.ep > 1 && f.dispatcher == "flex" ? *backend : MoeDispatcher::alltoall;
  if (f.load_balancing != "aux_loss" && f.load_balancing != "none")
    refuse("--moe-router-load-balancing-type", "Parallax models aux_loss or none (got \"" + f.load_balancing + "\")");
  if (f.router != "softmax" && f.router != "sigmoid")
    refuse("--moe-router-score-function", "must be softmax or sigmoid (got \"" + f.router + "\")");
  MoeSpec& x = m.moe;
  x.num_experts = f.num_experts;
  x.top_k = f.top_k > 0 ? f.top_k : 2;  // Megatron-LM's --moe-router-topk default
  x.expert_ffn_hidden = f.expert_ffn_hidden > 0 ? f.expert_ffn_hidden : m.ffn_hidden;  // its default
  x.router = f.router == "sigmoid" ? Router::sigmoid : Router::softmax;
  x.aux_loss_coeff = f.load_balancing == "none" ? 0 : f.aux_loss_coeff;
  x.capacity_factor = f.capacity_factor;
  x.shared_experts = f.shared_ffn_hidden > 0 ? 1 : 0;
  x.shared_expert_ffn_hidden = f.shared_ffn_hidden;
  x.layer_freq = 1;
  x.first_k_dense = 0;
  if (f.layer_freq.empty()) return;
  // Parallax's rule: the first k layers dense, then one MoE layer every n-th (by index).
  const std::vector<int> pattern = layer_pattern(f.layer_freq, m.layers);
  int64_t k = 0;
  while (k < m.layers && pattern[static_cast<size_t>(k)] == 0) ++k;
  if (k == m.layers) refuse("--moe-layer-freq", "has no MoE layer");
  int64_t n = 1;
  while (k + n < m.layers && pattern[static_cast<size_t>(k + n)] == 0) ++n;
  // Layer l is MoE when l >= k and l % n == 0: the first MoE layer must sit on a multiple of n.
  x.first_k_dense = k;
  x.layer_freq = n;
  for (int64_t l = 0; l < m.layers; ++l)
    if ((pattern[static_cast<size_t>(l)] == 1) != m.is_moe_layer(l))
      refuse("--moe-layer-freq", "must be the first k layers dense, then every n-th layer (layer l with "
             "l % n == 0) an MoE layer (got \"" + f.layer_freq + "\")");
}

}  // namespace parallax::megatron_moe
