#pragma once
// Megatron-Core's mixture-of-experts flags as `--from-megatron-args` reads them (the export,
// export/src/megatron_moe.hpp, writes them), and the integer reader every Megatron-LM flag uses.
// Internal to parallax::inputs.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax::megatron_moe {

// A flag's integer value, all of `v`; throws InputError("megatron args", flag, ...) otherwise.
inline int64_t parse_int(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return static_cast<int64_t>(x);
  } catch (const std::exception&) {
    throw InputError("megatron args", flag, "must be an integer (got \"" + v + "\")");
  }
}

// The MoE flags of a command line as read, before they are checked against the model.
struct Flags {
  int64_t num_experts = 0, top_k = 0, expert_ffn_hidden = 0, ep = 1, etp = 0;
  int64_t shared_ffn_hidden = 0;  // --moe-shared-expert-intermediate-size: all shared experts
  std::string layer_freq;         // --moe-layer-freq as written (an integer or a list)
  std::string router = "softmax", load_balancing = "aux_loss", dispatcher = "allgather";
  std::string flex_backend = "deepep";  // --moe-flex-dispatcher-backend, Megatron-Core's default
  bool enable_deepep = false;           // --moe-enable-deepep (deprecated spelling of deepep)
  double aux_loss_coeff = 0, capacity_factor = 0;
  bool seen = false;  // any MoE flag at all
};

// Reads flag `a` (its value through `value`) into f; false when `a` is not an MoE flag Parallax
// reads. Throws InputError("megatron args", flag, rule) on a value it cannot take.
bool read_flag(const std::string& a, const std::function<std::string()>& value, Flags& f);

// Puts the flags into the model and plan: refuses what Parallax does not model (another token
// dispatcher, a load-balancing type other than aux_loss or none, a layer pattern that is not
// "the first k dense, then every n-th") with one InputError naming the flag.
void apply(const Flags& f, ModelSpec& m, PlanSpec& p);

// Megatron-LM's --moe-layer-freq (moe_freq_type): an integer n (every n-th layer) or a Python
// list expression of 0/1 per layer, "[0,0,1,1]" or "([0]*3+[1]*58)" (parentheses may have been
// dropped by the command reader), as one 0/1 per layer.
std::vector<int> layer_pattern(const std::string& text, int64_t layers);

}  // namespace parallax::megatron_moe
