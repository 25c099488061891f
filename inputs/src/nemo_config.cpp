#include "parallax/inputs/nemo_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "flag_file.hpp"
#include "hydra_config.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax {
namespace {

// Reads the config's keys (errors naming them) and writes the Megatron-LM arguments.
struct Reader {
  const hydra::Config& c;
  NemoConfig& out;

  [[noreturn]] void refuse(const std::string& key, const std::string& rule) const {
    throw InputError(c.path(), "$." + key, rule);
  }
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max) const {
    const std::optional<std::string> v = c.scalar(key);
    if (!v) return std::nullopt;
    return flag_file::int_of(c.path(), *v, "$." + key, min, max);
  }
  int64_t needed(const std::string& key, int64_t min, int64_t max) const {
    const std::optional<int64_t> v = integer(key, min, max);
    if (!v) refuse(key, "is needed: the config does not say it");
    return *v;
  }
  std::string text(const std::string& key, const std::string& otherwise) const {
    return c.scalar(key).value_or(otherwise);
  }
  // YAML 1.1's True/False, as NeMo's configs write them, or true/false.
  bool flag(const std::string& key, bool otherwise) const {
    const std::optional<std::string> v = c.scalar(key);
    if (!v) return otherwise;
    std::string t = *v;
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char x) { return std::tolower(x); });
    return flag_file::bool_of(c.path(), t == "true" || t == "false" ? t : *v, "$." + key);
  }
  void arg(const std::string& megatron_flag, const std::string& key, const std::string& value = "") {
    out.megatron_args.push_back(megatron_flag);
    if (!value.empty()) out.megatron_args.push_back(value);
    out.key_of[megatron_flag] = "$." + key;
  }
  void arg(const std::string& megatron_flag, const std::string& key, int64_t value) {
    arg(megatron_flag, key, std::to_string(value));
  }
};

std::string run_name(const hydra::Config& c) {
  for (const char* key : {"run.name", "name"}) {
    try {
      if (const std::optional<std::string> v = c.scalar(key)) return *v;
    } catch (const InputError&) {
      // a name that does not resolve is only a name
    }
  }
  return "nemo-config";
}

// trainer: GPUs, precision (Lightning's default 32), steps; fp8 is the model's (Transformer
// Engine, NeMo's fp8 / fp8_e4m3 / fp8_hybrid keys: E4M3 everywhere or the hybrid format).
void read_trainer(Reader& r) {
  r.out.nodes = r.needed("trainer.num_nodes", 1, Limits::max_gpus);
  r.out.devices = r.needed("trainer.devices", 1, Limits::max_gpus_per_node);
  r.out.key_of["--nodes"] = "$.trainer.num_nodes";
  const std::string precision = r.text("trainer.precision", "32");
  if (precision == "bf16" || precision == "bf16-mixed") r.arg("--bf16", "trainer.precision");
  else if (precision == "16" || precision == "16-mixed") r.arg("--fp16", "trainer.precision");
  else if (precision != "32")
    r.refuse("trainer.precision", "must be 16, 16-mixed, bf16, bf16-mixed or 32 (got \"" + precision + "\")");
  if (r.flag("model.fp8", false))
    r.arg("--fp8-format", "model.fp8", r.flag("model.fp8_e4m3", false) ? "e4m3" : "hybrid");
  const std::optional<int64_t> steps = r.integer("trainer.max_steps", -1, Limits::max_global_batch);
  if (steps && *steps > 0) r.arg("--train-iters", "trainer.max_steps", *steps);
}

void read_recompute(Reader& r) {
  const std::string g = r.text("model.activations_checkpoint_granularity", "");
  if (g == "selective") {
    r.arg("--recompute-granularity", "model.activations_checkpoint_granularity", "selective");
  } else if (g == "full") {
    const std::string method = r.text("model.activations_checkpoint_method", "uniform");
    if (method != "uniform" && method != "block")
      r.refuse("model.activations_checkpoint_method", "must be uniform or block (got \"" + method + "\")");
    // block: the first N layers of each stage; none of them at N = 0.
    const int64_t n = method == "block" ? r.needed("model.activations_checkpoint_num_layers", 0, Limits::max_layers) : 1;
    if (n == 0) return;
    r.arg("--recompute-granularity", "model.activations_checkpoint_granularity", "full");
    r.arg("--recompute-method", "model.activations_checkpoint_method", method);
    r.arg("--recompute-num-layers", "model.activations_checkpoint_num_layers", n);
  } else if (!g.empty()) {
    r.refuse("model.activations_checkpoint_granularity", "must be null, selective or full (got \"" + g + "\")");
  }
}

// The parallel layout and the batch. Context and expert parallelism and the expert count are
// passed on as Megatron-LM's flags for the importer to check.
void read_parallel(Reader& r) {
  const int64_t tp = r.integer("model.tensor_model_parallel_size", 1, Limits::max_gpus).value_or(1);
  const int64_t pp = r.integer("model.pipeline_model_parallel_size", 1, Limits::max_gpus).value_or(1);
  r.arg("--tensor-model-parallel-size", "model.tensor_model_parallel_size", tp);
  r.arg("--pipeline-model-parallel-size", "model.pipeline_model_parallel_size", pp);
  const std::optional<int64_t> vpp = r.integer("model.virtual_pipeline_model_parallel_size", 1, Limits::max_layers);
  if (vpp && *vpp > 1)
    r.arg("--virtual-pipeline-model-parallel-size", "model.virtual_pipeline_model_parallel_size", *vpp);
  for (const auto& [key, megatron_flag] : {std::pair{"model.context_parallel_size", "--context-parallel-size"},
                                           std::pair{"model.expert_model_parallel_size", "--expert-model-parallel-size"},
                                           std::pair{"model.num_moe_experts", "--num-experts"}})
    if (const std::optional<int64_t> v = r.integer(key, 0, Limits::max_gpus); v && *v > 1) r.arg(megatron_flag, key, *v);
  // NeMo turns sequence parallelism off at tp 1 (MegatronBaseModel._validate_and_override_config).
  if (r.flag("model.sequence_parallel", false) && tp > 1) r.arg("--sequence-parallel", "model.sequence_parallel");
  const int64_t gpus = r.out.nodes * r.out.devices;
  if (gpus % (tp * pp) != 0)
    r.refuse("model.tensor_model_parallel_size",
             "tp (" + std::to_string(tp) + ") x pp (" + std::to_string(pp) +
                 ") must divide the GPUs, trainer.num_nodes x trainer.devices (" + std::to_string(gpus) + ")");
  const int64_t mbs = r.needed("model.micro_batch_size", 1, Limits::max_global_batch);
  const int64_t batch = r.needed("model.global_batch_size", 1, Limits::max_global_batch);
  const int64_t dp = gpus / (tp * pp);
  if (batch % (mbs * dp) != 0)
    r.refuse("model.global_batch_size", "must be a multiple of micro_batch_size x data-parallel size, " +
                                            std::to_string(mbs) + " x " + std::to_string(dp) + " (got " +
                                            std::to_string(batch) + ")");
  r.arg("--micro-batch-size", "model.micro_batch_size", mbs);
  r.arg("--global-batch-size", "model.global_batch_size", batch);
  read_recompute(r);
  const std::string optim = r.text("model.optim.name", "");
  if (optim == "distributed_fused_adam" || optim == "mcore_distributed_optim")
    r.arg("--use-distributed-optimizer", "model.optim.name");
  if (r.flag("model.fsdp", false))
    r.refuse("model.fsdp", "NeMo's torch FSDP is not modelled yet (its distributed optimizer, optim.name "
                           "distributed_fused_adam, is)");
}

// One of `allowed` (the first is the default), or the config's key is refused.
std::string choice(const Reader& r, const std::string& key, const std::vector<std::string>& allowed,
                   const std::string& what) {
  const std::string v = r.text(key, allowed.front());
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  r.refuse(key, "must be " + list + ": the " + what + " Parallax models (got \"" + v + "\")");
}

// NeMo's RoPE keys (megatron_gpt_model.py): model.rotary_base (10000 by default; configs write
// 500000.0) and model.scale_positional_embedding, Llama 3.1's scaling with the numbers NeMo's
// apply_rope_scaling and Megatron-LM's --use-rope-scaling share (factor 8, low 1, high 4, 8192).
void read_rope(Reader& r) {
  if (const std::optional<std::string> v = r.c.scalar("model.rotary_base")) {
    double base = 0;
    try {
      size_t used = 0;
      base = std::stod(*v, &used);
      if (used != v->size()) base = 0;
    } catch (const std::logic_error&) {
    }
    if (!(base >= 1 && base <= 1e12) || base != std::floor(base))
      r.refuse("model.rotary_base", "must be a whole number >= 1 (Megatron-LM's --rotary-base is an integer) (got \"" +
                                        *v + "\")");
    r.arg("--rotary-base", "model.rotary_base", static_cast<int64_t>(base));
  }
  if (r.flag("model.scale_positional_embedding", false))
    r.arg("--use-rope-scaling", "model.scale_positional_embedding");
}

void read_shape(Reader& r) {
  const int64_t heads = r.needed("model.num_attention_heads", 1, Limits::max_heads);
  const int64_t hidden = r.needed("model.hidden_size", 1, Limits::max_hidden);
  r.arg("--num-layers", "model.num_layers", r.needed("model.num_layers", 1, Limits::max_layers));
  r.arg("--hidden-size", "model.hidden_size", hidden);
  r.arg("--num-attention-heads", "model.num_attention_heads", heads);
  std::string seq_key = "model.encoder_seq_length";
  for (const char* k : {"model.seq_length", "model.data.seq_length"})
    if (!r.c.scalar(seq_key)) seq_key = k;
  if (!r.c.scalar(seq_key)) r.refuse("model.encoder_seq_length", "is needed: the config does not say it (nor model.seq_length)");
  const int64_t seq = r.needed(seq_key, 1, Limits::max_seq_len);
  r.arg("--seq-length", seq_key, seq);
  if (const std::optional<int64_t> f = r.integer("model.ffn_hidden_size", 1, Limits::max_hidden * 8))
    r.arg("--ffn-hidden-size", "model.ffn_hidden_size", *f);
  const std::optional<int64_t> groups = r.integer("model.num_query_groups", 1, Limits::max_heads);
  if (groups && *groups != heads) {
    r.arg("--group-query-attention", "model.num_query_groups");
    r.arg("--num-query-groups", "model.num_query_groups", *groups);
  }
  const std::optional<int64_t> kv_channels = r.integer("model.kv_channels", 1, Limits::max_hidden);
  if (kv_channels && *kv_channels * heads != hidden)
    r.arg("--kv-channels", "model.kv_channels", *kv_channels);
  const std::string position = choice(r, "model.position_embedding_type", {"learned_absolute", "rope"}, "positions");
  const std::optional<int64_t> positions = r.integer("model.max_position_embeddings", 1, Limits::max_seq_len);
  if (positions && position == "learned_absolute" && *positions < seq)
    r.refuse("model.max_position_embeddings", "must be at least the sequence length (" + std::to_string(seq) +
                                                  ") with learned_absolute positions (got " + std::to_string(*positions) + ")");
  r.arg("--position-embedding-type", "model.position_embedding_type", position);
  if (position == "rope") read_rope(r);
  if (choice(r, "model.activation", {"gelu", "swiglu", "fast-swiglu"}, "activations") != "gelu")
    r.arg("--swiglu", "model.activation");
  const std::string norm = choice(r, "model.normalization", {"layernorm", "layernorm1p", "rmsnorm"}, "normalizations");
  r.arg("--normalization", "model.normalization", norm == "rmsnorm" ? "RMSNorm" : "LayerNorm");
  if (!r.flag("model.bias", true)) r.arg("--disable-bias-linear", "model.bias");
  if (!r.flag("model.share_embeddings_and_output_weights", true))
    r.arg("--untie-embeddings-and-output-weights", "model.share_embeddings_and_output_weights");
  // NeMo's defaults, 0.1 each; the model has one probability.
  const std::string hidden_dropout = r.text("model.hidden_dropout", "0.1");
  const std::string attention_dropout = r.text("model.attention_dropout", "0.1");
  r.arg("--hidden-dropout", "model.hidden_dropout", hidden_dropout);
  r.arg("--attention-dropout", "model.attention_dropout", attention_dropout);
  try {  // values that are not probabilities: the importer names their key
    const double h = std::stod(hidden_dropout);
    if (h >= 0 && h < 1 && h != std::stod(attention_dropout))
      r.refuse("model.attention_dropout", "must equal model.hidden_dropout (" + hidden_dropout +
                                              "): Parallax's model has one dropout probability (got " +
                                              attention_dropout + ")");
  } catch (const std::logic_error&) {
  }
}

// The vocabulary: model.override_vocab_size as NeMo builds the model with it; else Megatron's
// GPT-2 BPE tokenizer, which the importer reads as GPT-2's 50,257 tokens (as --vocab-file); a
// sentencepiece or Hugging Face tokenizer's size is in its model file, not in the config.
void read_vocab(Reader& r) {
  if (const std::optional<int64_t> v = r.integer("model.override_vocab_size", 1, Limits::max_vocab)) {
    r.arg("--vocab-size", "model.override_vocab_size", *v);
    return;
  }
  const std::string library = r.text("model.tokenizer.library", "");
  const std::string type = r.text("model.tokenizer.type", "");
  if (library == "megatron" && type == "GPT2BPETokenizer") {
    r.arg("--vocab-file", "model.tokenizer.vocab_file", "gpt2-vocab.json");
    return;
  }
  r.refuse("model.tokenizer", "the vocabulary of a " + (library.empty() ? std::string("") : library + " ") +
                                  "tokenizer is not in the config: give its size as model.override_vocab_size");
}

}  // namespace

bool is_nemo_config(const std::string& path) {
  try {
    const YAML::Node doc = YAML::LoadFile(path);
    return doc.IsMap() && doc["trainer"].IsMap() && doc["model"].IsMap();
  } catch (const YAML::Exception&) {
    return false;
  }
}

NemoConfig read_nemo_config(const std::string& path) {
  const hydra::Config c(path, flag_file::load_mapping(path));
  NemoConfig out;
  out.path = path;
  out.name = run_name(c);
  Reader r{c, out};
  read_trainer(r);
  read_parallel(r);
  read_shape(r);
  read_vocab(r);
  return out;
}

void rethrow_as_nemo_error(const InputError& e, const NemoConfig& c) {
  const bool flag = e.source() == "command line" && e.path() == "--nodes";
  if (e.source() != "megatron args" && !flag) throw e;
  const auto it = c.key_of.find(e.path());
  if (it == c.key_of.end()) throw InputError(c.path, "$", e.path() + " (as Megatron-LM reads it): " + e.rule());
  throw InputError(c.path, it->second, e.rule());
}

}  // namespace parallax
