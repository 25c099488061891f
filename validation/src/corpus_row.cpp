// One row of the validation corpus: schema breaks throw InputError; what the cost model cannot
// express yet becomes a reason, and the row is listed as unsupported.
#include "corpus_row.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/topologies/cluster_size.hpp"
#include "parallax/validation/validation.hpp"

namespace parallax::detail {

bool unpublished(const nlohmann::json& v) {
  return v.is_string() && v.get<std::string>().rfind("unpublished", 0) == 0;
}

std::optional<int64_t> int_or_unpublished(JsonObjectReader& r, const std::string& key,
                                          bool allow_na) {
  const nlohmann::json& v = r.raw(key);
  if (unpublished(v)) return std::nullopt;
  if (allow_na && v.is_string() && v.get<std::string>() == "n/a") return 1;
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > Limits::max_gpus) {
    r.fail(key, "must be a positive integer or \"unpublished...\"" +
                    std::string(allow_na ? " or \"n/a\"" : "") + " (got " + v.dump() + ")");
  }
  return v.get<int64_t>();
}

void add_reason(std::vector<std::string>& reasons, const std::string& reason) {
  if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) reasons.push_back(reason);
}

namespace {

struct Reader {
  const CorpusFile& f;
  PublishedRun run;
  std::vector<std::string> reasons;  // why the cost model cannot express the row

  void need(const std::string& reason) { add_reason(reasons, reason); }

  void model(JsonObjectReader& m) {
    ModelSpec& s = run.model;
    s.name = m.get_string("name");
    s.source = f.source;
    int64_t* ints[] = {&s.layers, &s.hidden, &s.heads, &s.kv_heads, &s.ffn_hidden, &s.seq_len, &s.vocab};
    const char* names[] = {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"};
    for (size_t i = 0; i < 7; ++i) {
      const auto v = int_or_unpublished(m, names[i]);
      if (!v) need(std::string("model ") + names[i] + " unpublished");
      *ints[i] = v.value_or(1);
    }
    const nlohmann::json& act = m.raw("activation");
    if (unpublished(act)) {
      need("model activation unpublished");
    } else {
      const std::string a = m.get_enum("activation", {"gelu", "swiglu", "squared_relu"});
      s.activation = a == "swiglu" ? Activation::swiglu : Activation::gelu;
      if (a == "squared_relu") {
        run.assumed.push_back("squared-ReLU MLP costed as GELU's: the same two GEMMs, an "
                              "element-wise op of the same bytes");
      }
    }
    if (unpublished(m.raw("position"))) need("model position unpublished");
    else {
      const std::string p = m.get_enum("position", {"learned", "rope", "alibi"});
      s.position = p == "learned" ? Position::learned : p == "rope" ? Position::rope : Position::alibi;
    }
    if (unpublished(m.raw("norm"))) need("model norm unpublished");
    else s.norm = m.get_enum("norm", {"layernorm", "rmsnorm"}) == "rmsnorm" ? Norm::rmsnorm : Norm::layernorm;
    if (unpublished(m.raw("tied_embeddings"))) need("model tied_embeddings unpublished");
    else s.tied_embeddings = m.get_bool("tied_embeddings");
    // Dropout where the source's configuration states it; Megatron-LM's 0.1 otherwise, said aloud:
    // its masks weigh a byte per activation element, which can decide whether a plan fits.
    if (m.has("dropout")) s.dropout = m.get_number("dropout", 0, Limits::max_dropout);
    else run.assumed.push_back("dropout unpublished: 0.1, Megatron-LM's default");
    // Heads wider or narrower than hidden / heads (Hugging Face head_dim, Megatron --kv-channels).
    if (m.has("head_dim")) {
      const auto v = int_or_unpublished(m, "head_dim");
      if (!v) need("model head_dim unpublished");
      else s.set_head_dim(*v);
    }
    experts(m);
    m.finish();
  }

  // A mixture of experts: the row's flat fields as a model file's "moe" object (model_spec.hpp's
  // MoeSpec, read with its rules): experts -> num_experts, moe_layer_freq -> layer_freq.
  void experts(JsonObjectReader& m) {
    const std::pair<const char*, const char*> keys[] = {
        {"experts", "num_experts"},       {"top_k", "top_k"},
        {"expert_ffn_hidden", "expert_ffn_hidden"}, {"shared_experts", "shared_experts"},
        {"shared_expert_ffn_hidden", "shared_expert_ffn_hidden"}, {"moe_layer_freq", "layer_freq"},
        {"first_k_dense", "first_k_dense"}, {"router", "router"},
        {"capacity_factor", "capacity_factor"}};
    nlohmann::json moe = nlohmann::json::object();
    for (const auto& [row_key, spec_key] : keys) {
      if (!m.has(row_key)) continue;
      const nlohmann::json& v = m.raw(row_key);
      if (unpublished(v)) need(std::string("model ") + row_key + " unpublished");
      else moe[spec_key] = v;
    }
    if (moe.empty() || !reasons.empty()) return;
    if (!moe.contains("num_experts")) {
      need("model experts unpublished");
      return;
    }
    const nlohmann::json holder = {{"moe", moe}};
    JsonObjectReader h(holder, f.path, m.path());
    read_moe(h, run.model);
  }

  void hardware(JsonObjectReader& r) {
    const nlohmann::json& gpu = r.raw("gpu");
    const auto gpus = preset_names("gpus");
    if (unpublished(gpu)) {
      std::string what = gpu.get<std::string>().substr(std::string("unpublished").size());
      what.erase(0, what.find_first_not_of(": "));
      for (char& ch : what) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      need("gpu " + what);
    } else if (!gpu.is_string() || std::find(gpus.begin(), gpus.end(), gpu.get<std::string>()) == gpus.end()) {
      r.fail("gpu", "must be a GPU preset name or \"unpublished: ...\" (got " + gpu.dump() + ")");
    } else {
      run.gpu = gpu.get<std::string>();
    }
    run.gpus = r.get_int("gpus", 1, Limits::max_gpus);
    const nlohmann::json& cl = r.raw("cluster");
    if (run.gpu.empty()) return;
    if (cl.is_string() && !unpublished(cl)) {
      run.cluster = load_cluster(cl.get<std::string>());
      if (run.cluster.gpu.name != run.gpu) {
        r.fail("gpu", "cluster " + run.cluster.name + " has GPU " + run.cluster.gpu.name + ", not " + run.gpu);
      }
    } else {
      default_cluster();
    }
    if (run.cluster.total_gpus() < run.gpus) {
      run.cluster.nodes = (run.gpus + run.cluster.gpus_per_node - 1) / run.cluster.gpus_per_node;
      run.assumed.push_back("cluster " + run.cluster.name + " grown to " +
                            std::to_string(run.cluster.nodes) + " nodes for the row's GPUs");
      const ResizedCluster grown = with_nodes(run.cluster, run.cluster.nodes, f.path, "$.gpus");
      run.cluster = grown.cluster;
      if (grown.third_tier_added) run.assumed.push_back("with a third (core) switch tier");
    }
    const ClusterSpec segmented = with_job_segments(run.cluster, run.gpus, f.path, "$.gpus");
    if (segmented.name != run.cluster.name)
      run.assumed.push_back("allocated as " + segmented.name + " (SLURM --segment, as Megatron-Bridge's "
                            "performance scripts choose it)");
    run.cluster = segmented;
  }

  // The first cluster preset (by name) built of the row's GPU: the cluster a user of that GPU
  // would pick when the source does not describe its own.
  void default_cluster() {
    for (const std::string& name : preset_names("clusters")) {
      ClusterSpec c = load_cluster(name);
      if (c.gpu.name != run.gpu) continue;
      run.cluster = c;
      run.assumed.push_back("cluster unpublished: " + name);
      return;
    }
    need("no cluster preset of gpu " + run.gpu);
  }

};

}  // namespace

RowOutcome read_corpus_row(const nlohmann::json& row, const CorpusFile& f, size_t index) {
  const std::string at = "$.runs[" + std::to_string(index) + "]";
  JsonObjectReader r(row, f.path, at);
  Reader rd{f, {}, {}};
  PublishedRun& run = rd.run;
  run.id = r.get_string("id");
  run.source = f.source;
  run.group = f.group;
  run.stack = f.stack;
  r.get_string("where");
  r.ignore("notes");
  r.ignore("interconnect");
  run.sweep = r.get_string_or("sweep", "");
  if (r.has("unsupported")) {
    const std::string u = r.get_string("unsupported");
    for (size_t from = 0; from <= u.size();) {
      const size_t end = std::min(u.find("; ", from), u.size());
      rd.need(u.substr(from, end - from));
      from = end + 2;
    }
  }
  {
    JsonObjectReader m = r.object("model");
    rd.model(m);
  }
  rd.hardware(r);
  read_row_job(r, run, rd.reasons);
  {
    JsonObjectReader p = r.object("plan");
    read_row_plan(p, run, rd.reasons);
  }
  read_row_measured(r, f, run, rd.reasons);
  r.finish();
  RowOutcome out;
  if (rd.reasons.empty()) {
    try {
      validate_plan(run.model, run.cluster, run.job, run.plan, run.gpus, f.path + " " + at);
    } catch (const InputError& e) {
      rd.need("the plan as resolved breaks " + e.path() + ": " + e.rule());
    }
  }
  if (rd.reasons.empty() && run.interleaved_only) {
    try {
      (void)valid_candidates(run);
    } catch (const InputError&) {
      rd.need("interleaved schedule: no vpp > 1 passes the plan rules (micro-batches a multiple "
              "of pp, equal virtual stages)");
    }
  }
  if (!rd.reasons.empty()) {
    std::string why;
    for (const std::string& s : rd.reasons) why += (why.empty() ? "" : "; ") + s;
    out.unsupported = {run.id, run.source, why};
    return out;
  }
  out.supported = true;
  out.run = std::move(run);
  return out;
}

}  // namespace parallax::detail
