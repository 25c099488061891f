// A model's "moe" object: the mixture of experts (model_spec.hpp's MoeSpec), read strictly, and
// its stated parameter counts checked against the shape.
#include <string>

#include "model_json_parts.hpp"
#include "parallax/core/param_counts.hpp"
#include "parallax/core/spec_json.hpp"
#include "int_text.hpp"

namespace parallax {

using nlohmann::json;

namespace {

// DeepSeek-V3 routes over 256 experts; designs of a million tiny experts exist (He 2024, PEER),
// but no trainer Parallax models runs more than tens of thousands.
constexpr int64_t kMaxExperts = 1 << 16;
// At num_experts / top_k an expert can take every token, so nothing is dropped: far beyond it is
// a unit mistake, not a capacity.
constexpr double kMaxCapacityFactor = 1e4;

constexpr const char* kMoeKeys[] = {"num_experts",    "top_k",          "expert_ffn_hidden",
                                    "shared_experts", "shared_expert_ffn_hidden",
                                    "layer_freq",     "first_k_dense",  "router",
                                    "aux_loss_coeff", "capacity_factor"};

using detail::n;

// Which layers are MoE: some must be, or the object describes a dense model.
void read_moe_layers(JsonObjectReader& o, ModelSpec& m) {
  MoeSpec& e = m.moe;
  e.layer_freq = o.get_int_or("layer_freq", 1, Limits::max_layers, 1);
  e.first_k_dense = o.get_int_or("first_k_dense", 0, Limits::max_layers, 0);
  if (e.first_k_dense >= m.layers)
    o.fail("first_k_dense", "must be < layers (" + n(m.layers) + "): every layer would be dense (got " +
                                n(e.first_k_dense) + ")");
  if (m.moe_layers() == 0)
    o.fail("layer_freq", "leaves no MoE layer among layers " + n(e.first_k_dense) + " to " +
                             n(m.layers - 1) + " (got " + n(e.layer_freq) + ")");
}

}  // namespace

void read_moe(JsonObjectReader& r, ModelSpec& m) {
  if (!r.has("moe")) return;
  JsonObjectReader o = r.object("moe");
  for (const char* k : kMoeKeys) o.ignore(k);
  o.finish();
  MoeSpec& e = m.moe;
  e.num_experts = o.get_int("num_experts", 0, kMaxExperts);
  if (e.num_experts == 0) {
    // num_experts 0 is a dense model: anything else would be silently ignored.
    for (const char* k : kMoeKeys)
      if (std::string(k) != "num_experts" && o.has(k))
        o.fail(k, "needs num_experts >= 1 (num_experts 0 is a dense model)");
    return;
  }
  e.top_k = o.get_int("top_k", 1, kMaxExperts);
  if (e.top_k > e.num_experts)
    o.fail("top_k", "must be <= num_experts (" + n(e.num_experts) + ") (got " + n(e.top_k) + ")");
  e.expert_ffn_hidden = o.get_int("expert_ffn_hidden", 1, 4 * Limits::max_hidden);
  e.shared_experts = o.get_int_or("shared_experts", 0, kMaxExperts, 0);
  if (e.shared_experts > 0)
    e.shared_expert_ffn_hidden = o.get_int("shared_expert_ffn_hidden", 1, 4 * Limits::max_hidden);
  else if (o.has("shared_expert_ffn_hidden"))
    o.fail("shared_expert_ffn_hidden", "needs shared_experts >= 1 (shared_experts is 0)");
  read_moe_layers(o, m);
  e.router = o.get_enum_or("router", {"softmax", "sigmoid"}, "softmax") == "sigmoid" ? Router::sigmoid
                                                                                  : Router::softmax;
  e.aux_loss_coeff = o.get_number_or("aux_loss_coeff", 0, 1, 0);
  e.capacity_factor = o.get_number_or("capacity_factor", 0, kMaxCapacityFactor, 0);
}

json moe_to_json(const MoeSpec& e) {
  json j = {{"num_experts", e.num_experts},
            {"top_k", e.top_k},
            {"expert_ffn_hidden", e.expert_ffn_hidden},
            {"shared_experts", e.shared_experts},
            {"layer_freq", e.layer_freq},
            {"first_k_dense", e.first_k_dense},
            {"router", to_string(e.router)},
            {"aux_loss_coeff", e.aux_loss_coeff},
            {"capacity_factor", e.capacity_factor}};
  // The reader refuses a width for no shared expert.
  if (e.shared_experts > 0) j["shared_expert_ffn_hidden"] = e.shared_expert_ffn_hidden;
  return j;
}

void check_stated_parameters(JsonObjectReader& r, const ModelSpec& m) {
  if (!r.has("parameters")) return;
  JsonObjectReader o = r.object("parameters");
  o.ignore("total");
  o.ignore("active");
  o.finish();
  const json derived = param_counts_json(m);
  for (const char* k : {"total", "active"}) {
    const int64_t want = derived[k].get<int64_t>();
    const int64_t got = o.get_int(k, 0, int64_t{1} << 53);  // exact in a double
    if (got != want)
      o.fail(k, "must equal the count derived from the model's shape, " + n(want) + " (got " + n(got) +
                    "): counts are derived, not read");
  }
}

}  // namespace parallax
