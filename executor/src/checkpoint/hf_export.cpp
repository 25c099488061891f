#include "parallax/executor/checkpoint/hf_export.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "durable_file.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/param_table.hpp"
#include "parallax/executor/checkpoint/checkpoint.hpp"
#include "parallax/executor/checkpoint/checkpoint_identity.hpp"
#include "parallax/kernels/math.hpp"
#include "shape_text.hpp"

namespace parallax::exec {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kWhat = "checkpoint export --hf";

using detail::shape_text;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// Which transformers architecture expresses the model: GPT2LMHeadModel (a GeLU MLP, learned
// positions, LayerNorm, multi-head attention) or LlamaForCausalLM (a SwiGLU MLP, rotary positions
// with Llama 3's optional scaling, RMSNorm, any kv_heads dividing heads); refuses a model that
// is neither.
std::string hf_architecture(const ModelSpec& m, const std::string& where) {
  if (m.is_moe())
    throw InputError(where, "model.moe.num_experts",
                     "the Hugging Face export writes dense models only (" + m.name + " has " +
                         std::to_string(m.moe.num_experts) + " experts per MoE layer)");
  std::vector<std::string> not_gpt2, not_llama;
  if (m.activation != Activation::gelu) not_gpt2.push_back(to_string(m.activation));
  if (m.position != Position::learned) not_gpt2.push_back(to_string(m.position));
  if (m.norm != Norm::layernorm) not_gpt2.push_back(to_string(m.norm));
  if (m.kv_heads != 0 && m.kv_heads != m.heads) not_gpt2.push_back("grouped-query attention");
  if (m.activation != Activation::swiglu) not_llama.push_back(to_string(m.activation));
  if (m.position != Position::rope) not_llama.push_back(to_string(m.position) + std::string(" positions"));
  if (m.norm != Norm::rmsnorm) not_llama.push_back(to_string(m.norm));
  if (not_gpt2.empty()) return "GPT2LMHeadModel";
  if (not_llama.empty()) return "LlamaForCausalLM";
  throw InputError(where, "model", "the Hugging Face export writes the GPT-2 family (gelu, learned positions, layernorm, "
                                   "multi-head attention) or the Llama family (swiglu, rope, rmsnorm); " + m.name +
                                   " has " + joined(not_gpt2) + " (not GPT-2) and " + joined(not_llama) + " (not Llama)");
}

// The tensors of the model in checkpoint order, as a one-rank plan holds them (global shapes,
// in the executor's (out, in) layout).
std::vector<ParamTensor> model_tensors(const ModelSpec& m) {
  std::vector<ParamTensor> out;
  for (auto& t : stage_param_table(m, PlanSpec{}, 0, 0))
    if (!t.tied_copy) out.push_back(std::move(t));
  return out;
}

struct ExportTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Every tensor of the model from the checkpoint (HF layout, padding rows removed), converted to
// the export's dtype; refuses a checkpoint missing one, holding another's shape, or holding a
// tensor the model has not.
std::vector<ExportTensor> export_tensors(const std::string& step_dir, const ModelSpec& m,
                                         const std::string& dtype, int64_t& padding_rows) {
  auto stored = read_stored_tensors(step_dir);  // every shard's checksum verified
  std::vector<ExportTensor> out;
  padding_rows = 0;
  std::map<std::string, bool> expected;
  const bool llama = hf_llama_layout(m);
  std::vector<std::pair<StoredTensor, std::vector<int64_t>>> wanted;  // stored tensor, executor shape
  for (const auto& x : model_tensors(m))
    for (auto& t : stored_tensors(x, llama)) wanted.emplace_back(std::move(t), x.global_shape);
  for (const auto& [t, executor_shape] : wanted) {
    expected[t.name] = true;
    const auto it = stored.find(t.name);
    if (it == stored.end()) throw InputError(step_dir, t.name, "tensor missing from the checkpoint");
    GlobalTensor& g = it->second;
    std::vector<int64_t> want = t.shape;
    std::vector<int64_t> shape = g.shape;
    if (t.valid_rows > 0 && shape.size() == 2 && shape[0] >= t.valid_rows && shape[1] == want[1]) {
      padding_rows = shape[0] - t.valid_rows;  // the writing plan's padding (a multiple of 128*tp)
      shape[0] = want[0] = t.valid_rows;
    }
    if (shape != want)
      throw InputError(step_dir, t.name, "global shape " + shape_text(g.shape) + " does not fit the recorded model's " +
                                             (llama ? shape_text(t.shape) : shape_text(executor_shape) +
                                                                                 " (executor layout)"));
    const size_t n = static_cast<size_t>(shape.empty() ? 1 : shape[0]) *
                     static_cast<size_t>(shape.size() > 1 ? shape[1] : 1);
    ExportTensor e{t.name, shape, {}};
    if (dtype == "bf16") {
      e.bytes.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        const uint16_t b = kernels::to_bf16(g.data[i]).bits;
        e.bytes[2 * i] = static_cast<char>(b & 0xff);
        e.bytes[2 * i + 1] = static_cast<char>(b >> 8);
      }
    } else {
      e.bytes.assign(reinterpret_cast<const char*>(g.data.data()), n * sizeof(float));  // row-major: rows cut off the end
    }
    g.data = {};
    out.push_back(std::move(e));
  }
  for (const auto& [name, g] : stored)
    if (name.rfind("optimizer.", 0) != 0 && !expected.count(name))
      throw InputError(step_dir, name, "is not a tensor of the recorded model " + describe_model(m));
  return out;
}

// huggingface_hub's split_torch_state_dict_into_shards: tensors in order; a tensor larger than
// the limit gets a shard of its own; otherwise a new shard starts when the next tensor would
// take the current one past the limit.
std::vector<std::vector<size_t>> plan_shards(const std::vector<ExportTensor>& tensors, uint64_t max_bytes) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t b = tensors[i].bytes.size();
    if (b > max_bytes) {
      shards.push_back({i});
      continue;
    }
    if (current_bytes + b > max_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += b;
  }
  if (!current.empty()) shards.push_back(std::move(current));
  return shards;
}

std::string shard_name(size_t k, size_t n) {
  if (n == 1) return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", k + 1, n);
  return name;
}

// The output directory: a new name, or an empty directory (replaced by the rename).
fs::path checked_out_dir(const std::string& text) {
  if (text.empty()) throw InputError("command line", "--hf", "needs an output directory");
  fs::path out = fs::absolute(text).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  std::error_code ec;
  const auto st = fs::symlink_status(out, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st) || !fs::is_empty(out, ec))
      throw InputError(text, "--hf", "exists and is not an empty directory: nothing was written (choose a new directory)");
  }
  if (!fs::is_directory(out.parent_path(), ec))
    throw InputError(text, "--hf", "its parent directory does not exist");
  return out;
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The shortest decimal that reads back as the same float (1e-05, not 9.999999747378752e-06).
double shortest_decimal(float f) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, static_cast<double>(f));
    if (std::strtof(text, nullptr) == f) break;
  }
  return std::strtod(text, nullptr);
}

void write_text(const fs::path& path, const std::string& text) {
  write_file_durably(path.string(), {text}, "--hf");
}

}  // namespace

std::string hf_gpt2_config(const ModelSpec& m, const std::string& dtype) {
  json c;
  c["architectures"] = {"GPT2LMHeadModel"};
  c["model_type"] = "gpt2";
  c["vocab_size"] = m.vocab;
  c["n_positions"] = m.seq_len;
  c["n_embd"] = m.hidden;
  c["n_layer"] = m.layers;
  c["n_head"] = m.heads;
  c["n_inner"] = m.ffn_hidden;
  c["activation_function"] = "gelu_new";  // GPT-2's tanh approximation, as kernels::gelu computes
  c["layer_norm_epsilon"] = shortest_decimal(kernels::kNormEps);
  c["scale_attn_weights"] = true;  // softmax(q k^T / sqrt(head_dim)), as the executor
  c["scale_attn_by_inverse_layer_idx"] = false;
  c["reorder_and_upcast_attn"] = false;
  c["tie_word_embeddings"] = m.tied_embeddings;
  // The executor trains without dropout; transformers' GPT-2 defaults (0.1) would not be this model.
  c["resid_pdrop"] = 0.0;
  c["embd_pdrop"] = 0.0;
  c["attn_pdrop"] = 0.0;
  c["initializer_range"] = 0.02;
  // Parallax trains on token ids: no tokenizer is known, so no special tokens are claimed
  // (GPT2Config's default 50256 would name a token outside a smaller vocabulary).
  c["bos_token_id"] = nullptr;
  c["eos_token_id"] = nullptr;
  c["use_cache"] = true;
  c["torch_dtype"] = dtype == "bf16" ? "bfloat16" : "float32";
  return c.dump(2) + "\n";
}

std::string hf_llama_config(const ModelSpec& m, const std::string& dtype) {
  json c;
  c["architectures"] = {"LlamaForCausalLM"};
  c["model_type"] = "llama";
  c["vocab_size"] = m.vocab;
  c["hidden_size"] = m.hidden;
  c["intermediate_size"] = m.ffn_hidden;
  c["num_hidden_layers"] = m.layers;
  c["num_attention_heads"] = m.heads;
  c["num_key_value_heads"] = m.kv_head_count();
  c["head_dim"] = m.head_dim();
  c["max_position_embeddings"] = m.seq_len;
  c["hidden_act"] = "silu";  // SwiGLU: down(silu(gate x) * up x)
  c["rms_norm_eps"] = shortest_decimal(kernels::kNormEps);
  c["rope_theta"] = m.rope_base;
  if (m.has_rope_scaling()) {
    const RopeScaling& r = m.rope_scaling;
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", r.factor},
                         {"low_freq_factor", r.low_freq_factor},
                         {"high_freq_factor", r.high_freq_factor},
                         {"original_max_position_embeddings", r.original_max_position}};
  } else {
    c["rope_scaling"] = nullptr;
  }
  c["attention_bias"] = m.linear_bias;  // q, k, v and o
  c["mlp_bias"] = m.linear_bias;        // gate, up and down
  c["attention_dropout"] = 0.0;         // inference: the trained weights, no dropout
  c["tie_word_embeddings"] = m.tied_embeddings;
  c["pretraining_tp"] = 1;
  c["initializer_range"] = 0.02;
  // No tokenizer is known (Parallax trains on token ids): no special tokens are claimed.
  c["bos_token_id"] = nullptr;
  c["eos_token_id"] = nullptr;
  c["use_cache"] = true;
  c["torch_dtype"] = dtype == "bf16" ? "bfloat16" : "float32";
  return c.dump(2) + "\n";
}

uint64_t parse_byte_size(const std::string& text, const std::string& field) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const std::string digits = text.substr(0, i), unit = text.substr(i);
  std::string upper = unit;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // transformers' convert_file_size_to_int: units case-insensitive, KB/MB/GB decimal,
  // KiB/MiB/GiB binary, and a decimal unit ending in a lowercase "b" counts bits.
  static const std::map<std::string, uint64_t> units = {
      {"", 1}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}, {"KIB", 1ULL << 10}, {"MIB", 1ULL << 20},
      {"GIB", 1ULL << 30}};
  const auto u = units.find(upper);
  if (digits.empty() || digits.size() > 12 || u == units.end())
    throw InputError("command line", field,
                     "must be a size such as 5GB, 500MB, 10GiB or a byte count (got \"" + text + "\")");
  uint64_t n = std::stoull(digits) * u->second;
  if (upper.size() == 2 && unit.back() == 'b') n /= 8;  // "5Gb": gigabits
  if (n == 0) throw InputError("command line", field, "must be greater than 0");
  return n;
}

HfExportSummary export_hf(const HfExportOptions& o) {
  if (o.dtype != "fp32" && o.dtype != "bf16")
    throw InputError("command line", "--dtype", "must be fp32 or bf16 (got \"" + o.dtype + "\")");
  if (o.max_shard_bytes == 0) throw InputError("command line", "--max-shard-size", "must be greater than 0");
  const fs::path out = checked_out_dir(o.out_dir);

  HfExportSummary s;
  s.step_dir = resolve_complete_step(o.checkpoint, "checkpoint export");
  s.step = completed_step(s.step_dir);
  const auto files = shard_files(s.step_dir);
  if (files.empty()) throw InputError(s.step_dir, kWhat, "holds no shard files (*.safetensors)");
  const auto model = recorded_model(files.front());
  if (!model)
    throw InputError(files.front(), "model", "records no model (a checkpoint of another tool?): config.json cannot be written");
  s.model = *model;
  for (const auto& f : files) {  // every shard of the step belongs to the same model
    const auto theirs = recorded_model(f);
    if (!theirs || model_identity_hash(*theirs) != model_identity_hash(s.model))
      throw InputError(f, "model", "records " + (theirs ? describe_model(*theirs) : std::string("no model")) + ", " +
                                       files.front() + " records " + describe_model(s.model) +
                                       ": the step directory mixes checkpoints");
  }
  s.architecture = hf_architecture(s.model, files.front());
  auto tensors = export_tensors(s.step_dir, s.model, o.dtype, s.padding_rows_removed);

  const auto shards = plan_shards(tensors, o.max_shard_bytes);
  json weight_map = json::object();
  for (const auto& t : tensors) {
    s.tensor_bytes += t.bytes.size();
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    s.parameters += n;
  }
  s.tensors = static_cast<int64_t>(tensors.size());

  const fs::path tmp = out.parent_path() / (out.filename().string() + ".tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) throw InputError(tmp.string(), "--hf", "cannot create the directory: " + ec.message());
  try {
    write_text(tmp / "config.json", s.architecture == "LlamaForCausalLM" ? hf_llama_config(s.model, o.dtype)
                                                                         : hf_gpt2_config(s.model, o.dtype));
    s.files.push_back("config.json");
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string name = shard_name(k, shards.size());
      std::vector<TensorBytes> part;
      for (size_t i : shards[k]) {
        part.push_back({tensors[i].name, o.dtype == "bf16" ? "BF16" : "F32", tensors[i].shape, tensors[i].bytes});
        weight_map[tensors[i].name] = name;
      }
      // transformers refuses a safetensors file whose "format" is not pt (or tf, flax, mlx).
      write_safetensors((tmp / name).string(), part, {{"format", "pt"}}, "--hf");
      s.files.push_back(name);
    }
    if (shards.size() > 1) {
      const json index = {{"metadata", {{"total_size", s.tensor_bytes}}}, {"weight_map", weight_map}};
      write_text(tmp / "model.safetensors.index.json", index.dump(2) + "\n");
      s.files.push_back("model.safetensors.index.json");
    }
    fsync_dir(tmp);
    if (std::rename(tmp.c_str(), out.c_str()) != 0)
      throw InputError(o.out_dir, "--hf", std::string("cannot move the export into place: ") + std::strerror(errno));
    fsync_dir(out.parent_path());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return s;
}

}  // namespace parallax::exec
