// A NeMo 1.x training config read into the plan it runs (inputs/nemo_config, then export's
// import_megatron_args). The references are the configs' own values: tests/data/nemo-gpt3-5b.yaml
// and nemo-llama2-70b.yaml, written in the format of the NeMo-Framework-Launcher's
// launcher_scripts/conf/training/gpt3/5b.yaml and llama/llama2_70b.yaml (NVIDIA/
// NeMo-Framework-Launcher) and NeMo's examples/nlp/language_modeling/conf/megatron_gpt_config.yaml
// (NVIDIA/NeMo): every field below is checked against the number the YAML says.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../core/core_test_util.hpp"  // require_input_error
#include "parallax/inputs/megatron_import.hpp"
#include "parallax/inputs/nemo_config.hpp"

using namespace parallax;
using test::require_input_error;

namespace {

std::string sample(const std::string& name) { return std::string(PARALLAX_SOURCE_DIR) + "/tests/data/" + name; }

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sample with each `from` replaced by its `to` (each must occur), as a temporary file.
std::string edited(const std::string& name, std::initializer_list<std::pair<std::string, std::string>> edits) {
  std::string t = text_of(sample(name));
  for (const auto& [from, to] : edits) {
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
  }
  static int n = 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parallax_nemo_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".yaml"))
                               .string();
  std::ofstream(path) << t;
  return path;
}
std::string edited(const std::string& name, const std::string& from, const std::string& to) {
  return edited(name, {{from, to}});
}

// The plan file of a NeMo config: its Megatron-LM arguments imported over its GPU count, errors
// named by the config's key (apps/cmd_predict.cpp adds the cluster, stack and profile).
PlanFile plan_of(const std::string& path) {
  const NemoConfig n = read_nemo_config(path);
  PlanFile base;
  base.gpus = n.nodes * n.devices;
  try {
    return import_megatron_args(n.megatron_args, base).file;
  } catch (const InputError& e) {
    rethrow_as_nemo_error(e, n);
  }
}

}  // namespace

TEST_CASE("nemo: a config is told from a recipe by its trainer and model mappings", "[inputs]") {
  CHECK(is_nemo_config(sample("nemo-gpt3-5b.yaml")));
  CHECK(is_nemo_config(sample("nemo-llama2-70b.yaml")));
  CHECK_FALSE(is_nemo_config(edited("nemo-gpt3-5b.yaml", "trainer:\n", "trainer_:\n")));
  CHECK_FALSE(is_nemo_config(sample("README.md")));
  CHECK_FALSE(is_nemo_config("/nonexistent/nemo.yaml"));
}

TEST_CASE("nemo: the GPT-3 5B config gives its model, batch and plan", "[inputs]") {
  const NemoConfig n = read_nemo_config(sample("nemo-gpt3-5b.yaml"));
  CHECK(n.name == "gpt3_5b");
  CHECK(n.nodes == 16);
  CHECK(n.devices == 8);
  const PlanFile f = plan_of(sample("nemo-gpt3-5b.yaml"));
  CHECK(f.gpus == 16 * 8);
  const ModelSpec& m = f.model;
  CHECK(m.layers == 24);
  CHECK(m.hidden == 4096);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 32);  // num_query_groups: null
  CHECK(m.seq_len == 2048);
  CHECK(m.ffn_hidden == 4 * 4096);  // ${multiply:4, ${.hidden_size}}
  CHECK(m.vocab == 50257);  // GPT2BPETokenizer: GPT-2's vocabulary (Radford et al. 2019)
  CHECK(m.activation == Activation::gelu);
  CHECK(m.position == Position::learned);
  CHECK(m.norm == Norm::layernorm);
  CHECK(m.tied_embeddings);
  CHECK(m.linear_bias);
  CHECK(m.dropout == Approx(0.1));
  const PlanSpec& p = f.plan;
  CHECK(p.tp == 1);
  CHECK(p.pp == 1);
  CHECK(p.vpp == 1);
  CHECK(p.schedule == Schedule::one_f_one_b);
  CHECK(p.dp == 128);
  CHECK(p.micro_batch == 4);
  CHECK(p.num_micro_batches == 2048 / (4 * 128));
  CHECK_FALSE(p.sequence_parallel);
  CHECK(p.recompute == Recompute::none);
  CHECK(p.zero == 1);  // optim.name: distributed_fused_adam
  CHECK(f.job.global_batch == 2048);
  CHECK(f.job.dtype == Dtype::bf16);
  CHECK(f.job.tokens == Approx(75000.0 * 2048 * 2048));  // max_steps x global batch x sequence
}

TEST_CASE("nemo: the Llama 2 70B config gives GQA, SwiGLU, RoPE, RMSNorm and interleaving", "[inputs]") {
  const PlanFile f = plan_of(sample("nemo-llama2-70b.yaml"));
  CHECK(f.gpus == 128 * 8);
  const ModelSpec& m = f.model;
  CHECK(m.layers == 80);
  CHECK(m.hidden == 8192);
  CHECK(m.heads == 64);
  CHECK(m.kv_heads == 8);
  CHECK(m.seq_len == 4096);
  CHECK(m.ffn_hidden == 28672);
  CHECK(m.vocab == 32000);
  CHECK(m.activation == Activation::swiglu);  // fast-swiglu
  CHECK(m.position == Position::rope);
  CHECK(m.rope_base == 10000);  // no model.rotary_base: NeMo's default, Llama 2's
  CHECK_FALSE(m.has_rope_scaling());
  CHECK(m.norm == Norm::rmsnorm);
  CHECK_FALSE(m.tied_embeddings);
  CHECK_FALSE(m.linear_bias);
  CHECK(m.dropout == 0.0);
  const PlanSpec& p = f.plan;
  CHECK(p.tp == 4);
  CHECK(p.pp == 4);
  CHECK(p.vpp == 20);
  CHECK(p.schedule == Schedule::interleaved);
  CHECK(p.dp == 1024 / (4 * 4));
  CHECK(p.micro_batch == 1);
  CHECK(p.num_micro_batches == 2048 / 64);
  CHECK(p.sequence_parallel);
  CHECK(p.recompute == Recompute::none);  // granularity null: method block and 0 layers do nothing
  CHECK(p.zero == 1);
  CHECK(f.job.global_batch == 2048);
  CHECK(f.job.dtype == Dtype::bf16);
  CHECK(f.job.tokens == Approx(300000.0 * 2048 * 4096));
}

TEST_CASE("nemo: rotary_base and scale_positional_embedding give Llama 3.1's RoPE", "[inputs]") {
  // As NeMo's Llama 3.1 configs write them; NeMo's apply_rope_scaling: factor 8, low 1, high 4,
  // original context 8192 (megatron_gpt_model.py), Megatron-LM's --use-rope-scaling defaults.
  const PlanFile f = plan_of(edited("nemo-llama2-70b.yaml", "  rotary_percentage: 1.0\n",
                                    "  rotary_percentage: 1.0\n  rotary_base: 500000.0\n  scale_positional_embedding: True\n"));
  CHECK(f.model.rope_base == 500000);
  CHECK(f.model.rope_scaling == RopeScaling{8, 1, 4, 8192});
  const PlanFile unscaled = plan_of(edited("nemo-llama2-70b.yaml", "  rotary_percentage: 1.0\n",
                                           "  rotary_percentage: 1.0\n  rotary_base: 1000000\n"));
  CHECK(unscaled.model.rope_base == 1000000);
  CHECK_FALSE(unscaled.model.has_rope_scaling());
  require_input_error(
      [&] {
        (void)plan_of(edited("nemo-llama2-70b.yaml", "  rotary_percentage: 1.0\n",
                             "  rotary_percentage: 1.0\n  rotary_base: 10000.5\n"));
      },
      "$.model.rotary_base", {"whole number", "10000.5"});
}

TEST_CASE("nemo: recompute, fp8, precision and sequence parallelism as NeMo reads them", "[inputs]") {
  const std::string five = "nemo-gpt3-5b.yaml";
  CHECK(plan_of(edited(five, "granularity: null", "granularity: selective")).plan.recompute ==
        Recompute::selective);
  // full, block: the first activations_checkpoint_num_layers layers of each stage.
  const PlanFile block = plan_of(edited(five, {{"granularity: null", "granularity: full"},
                                               {"method: null", "method: block"},
                                               {"num_layers: null", "num_layers: 3"}}));
  CHECK(block.plan.recompute == Recompute::full);
  CHECK(block.plan.recompute_layers == 3);
  // full, uniform (or no method): every layer.
  const PlanFile uniform = plan_of(edited(five, "granularity: null", "granularity: full"));
  CHECK(uniform.plan.recompute == Recompute::full);
  CHECK(uniform.plan.recompute_layers == 0);
  CHECK(plan_of(edited(five, "fp8: False", "fp8: True")).job.dtype == Dtype::fp8);
  CHECK(plan_of(edited(five, "precision: bf16", "precision: 16-mixed")).job.dtype == Dtype::fp16);
  CHECK(plan_of(edited(five, "precision: bf16", "precision: bf16-mixed")).job.dtype == Dtype::bf16);
  CHECK(plan_of(edited(five, "precision: bf16", "precision: 32")).job.dtype == Dtype::fp32);
  // NeMo turns sequence parallelism off at tp 1 and keeps it above.
  CHECK_FALSE(plan_of(edited(five, "sequence_parallel: False", "sequence_parallel: True")).plan.sequence_parallel);
  const PlanFile tp2 = plan_of(edited(five, {{"sequence_parallel: False", "sequence_parallel: True"},
                                             {"tensor_model_parallel_size: 1", "tensor_model_parallel_size: 2"}}));
  CHECK(tp2.plan.tp == 2);
  CHECK(tp2.plan.dp == 64);
  CHECK(tp2.plan.sequence_parallel);
  // Without a distributed optimizer, no ZeRO.
  CHECK(plan_of(edited(five, "name: distributed_fused_adam", "name: fused_adam")).plan.zero == 0);
}

TEST_CASE("nemo: interpolations naming keys of the file resolve, others are refused by key", "[inputs]") {
  const std::string five = "nemo-gpt3-5b.yaml";
  // Absolute, relative one mapping up, and the launcher's `training.` prefix, nested in multiply.
  const PlanFile f = plan_of(edited(five, {{"num_layers: 24", "num_layers: ${multiply:${..trainer.num_nodes}, 3}"},
                                           {"global_batch_size: 2048", "global_batch_size: ${multiply:512, ${trainer.devices}}"},
                                           {"hidden_size: 4096", "hidden_size: ${training.model.data.seq_length}"}}));
  CHECK(f.model.layers == 16 * 3);
  CHECK(f.job.global_batch == 512 * 8);
  CHECK(f.model.hidden == 2048);
  CHECK(f.model.ffn_hidden == 4 * 2048);
  const std::string path = edited(five, "ffn_hidden_size: ${multiply:4, ${.hidden_size}}", "ffn_hidden_size: ${oc.env:FFN}");
  require_input_error([&] { (void)read_nemo_config(path); }, "$.model.ffn_hidden_size", {"cannot resolve ${oc.env:FFN}"});
  const std::string missing = edited(five, "num_layers: 24", "num_layers: ${data_dir}");
  require_input_error([&] { (void)read_nemo_config(missing); }, "$.model.num_layers", {"${data_dir}", "no key data_dir"});
  const std::string cycle = edited(five, {{"num_layers: 24", "num_layers: ${.depth}\n  depth: ${.num_layers}"}});
  require_input_error([&] { (void)read_nemo_config(cycle); }, "$.model.num_layers", {"a cycle?"});
  const std::string mandatory = edited(five, "num_layers: 24", "num_layers: ???");
  require_input_error([&] { (void)read_nemo_config(mandatory); }, "$.model.num_layers", {"???"});
}

// kv_channels as NeMo's GPT configs write it (megatron_gpt_config.yaml: "kv_channels: null #
// Projection weights dimension in multi-head attention. Set to hidden_size // num_attention_heads
// if null"): a width other than hidden / heads is the model's head_dim, passed as --kv-channels.
TEST_CASE("nemo: kv_channels other than hidden / heads is the model's head_dim", "[inputs]") {
  const PlanFile wide = plan_of(edited("nemo-llama2-70b.yaml", "kv_channels: null", "kv_channels: 256"));
  CHECK(wide.model.head_dim() == 256);  // 64 heads of 256 on hidden 8192
  CHECK(wide.model.hidden == 8192);
  const PlanFile same = plan_of(edited("nemo-llama2-70b.yaml", "kv_channels: null", "kv_channels: 128"));
  CHECK(same.model.head_dim() == 128);
  CHECK_FALSE(same.model.decoupled_head_dim());
}

TEST_CASE("nemo: what the config cannot say to the cost model gets one line naming its key", "[inputs]") {
  const std::string five = "nemo-gpt3-5b.yaml";
  auto refused = [&](const std::string& path, const std::string& key, std::initializer_list<std::string> words) {
    require_input_error([&] { (void)plan_of(path); }, key, words);
  };
  refused(edited(five, "precision: bf16", "precision: fp7"), "$.trainer.precision",
          {"must be 16, 16-mixed, bf16, bf16-mixed or 32", "fp7"});
  // Context parallelism is read (issue 26); one that does not divide the GPUs is refused.
  CHECK(plan_of(edited(five, "context_parallel_size: 1", "context_parallel_size: 2")).plan.cp == 2);
  refused(edited(five, "context_parallel_size: 1", "context_parallel_size: 3"), "$.model.context_parallel_size",
          {"tp (1) x cp (3) x pp (1) must divide the GPU count (128"});
  refused(edited(five, "  context_parallel_size: 1\n", "  context_parallel_size: 1\n  expert_model_parallel_size: 4\n"),
          "$.model.expert_model_parallel_size", {"needs --num-experts"});
  refused(edited(five, "  num_layers: 24\n", ""), "$.model.num_layers", {"is needed"});
  refused(edited(five, "  encoder_seq_length: 2048\n", ""), "$.model.max_position_embeddings",
          {"${.encoder_seq_length}", "no key model.encoder_seq_length"});
  refused(edited(five, "tensor_model_parallel_size: 1", "tensor_model_parallel_size: 3"),
          "$.model.tensor_model_parallel_size", {"tp (3) x pp (1) must divide the GPUs", "(128)"});
  refused(edited(five, "global_batch_size: 2048", "global_batch_size: 1000"), "$.model.global_batch_size",
          {"multiple of micro_batch_size x data-parallel size, 4 x 128", "1000"});
  refused(edited(five, "type: 'GPT2BPETokenizer'", "type: 'GPT2BertTokenizer'"), "$.model.tokenizer",
          {"model.override_vocab_size"});
  refused(edited(five, "fsdp: False", "fsdp: True"), "$.model.fsdp", {"not modelled yet"});
  refused(edited(five, "num_query_groups: null", "num_query_groups: null\n  activation: geglu"), "$.model.activation",
          {"gelu, swiglu or fast-swiglu", "geglu"});
  refused(edited(five, "num_query_groups: null", "num_query_groups: null\n  position_embedding_type: alibi"),
          "$.model.position_embedding_type", {"learned_absolute or rope", "alibi"});
  refused(edited(five, "attention_dropout: 0.1", "attention_dropout: 0.0"), "$.model.attention_dropout",
          {"must equal model.hidden_dropout"});
  refused(edited(five, "hidden_dropout: 0.1", "hidden_dropout: 1.5"), "$.model.hidden_dropout", {"probability"});
  refused(edited(five, "fp8: False", "fp8: maybe"), "$.model.fp8", {"true or false", "maybe"});
  // The Llama config without the vocabulary its sentencepiece model holds.
  require_input_error([&] { (void)read_nemo_config(edited("nemo-llama2-70b.yaml", "override_vocab_size: 32000", "")); },
                      "$.model.tokenizer", {"sentencepiece tokenizer", "model.override_vocab_size"});
}
