// TorchTitan exports (torchtitan.hpp): the job config read back section by section says the plan's
// degrees, batch, schedule and split in TorchTitan v0.2.2's field names; the llama3 flavor is the
// one of the model's shape; what TorchTitan cannot run as planned is refused with the reason.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/export/export_text.hpp"
#include "parallax/export/torchtitan.hpp"
#include "spec_builders.hpp"

// Named: the test sources build as unity batches, whose anonymous namespaces are shared.
namespace parallax::torchtitan_test {

using test::PlanBuilder;

namespace {

// The TOML the exporter writes, read back: section -> key -> value as written (strings with their
// quotes, arrays with their brackets), comments dropped. Enough TOML for this writer's output:
// "[section]" lines, "key = value" lines, arrays that span lines until their brackets close.
using TomlSections = std::map<std::string, std::map<std::string, std::string>>;

std::string without_comment(const std::string& line) {
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"' && (i == 0 || line[i - 1] != '\\')) in_string = !in_string;
    if (line[i] == '#' && !in_string) return line.substr(0, i);
  }
  return line;
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

TomlSections read_toml(const std::string& text) {
  TomlSections out;
  std::istringstream in(text);
  std::string line, section, key, value;
  int depth = 0;
  while (std::getline(in, line)) {
    line = trimmed(without_comment(line));
    if (depth > 0) {
      value += line;
    } else if (line.empty()) {
      continue;
    } else if (line.front() == '[' && line.back() == ']' && line.find('=') == std::string::npos) {
      section = line.substr(1, line.size() - 2);
      out[section];
      continue;
    } else {
      const size_t eq = line.find('=');
      REQUIRE(eq != std::string::npos);
      key = trimmed(line.substr(0, eq));
      value = trimmed(line.substr(eq + 1));
      depth = 0;
      line = value;
    }
    for (const char c : line) depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (depth == 0) out[section][key] = value;
  }
  return out;
}

int64_t integer(const TomlSections& t, const std::string& section, const std::string& key) {
  INFO(section << "." << key);
  REQUIRE(t.count(section) == 1);
  REQUIRE(t.at(section).count(key) == 1);
  return std::stoll(t.at(section).at(key));
}

std::string value(const TomlSections& t, const std::string& section, const std::string& key) {
  INFO(section << "." << key);
  REQUIRE(t.count(section) == 1);
  REQUIRE(t.at(section).count(key) == 1);
  return t.at(section).at(key);
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// A plan of `model` on DGX H100s for the TorchTitan stack; dp and the micro-batches follow from
// the GPUs and the global batch.
PlanFile torchtitan_plan(const std::string& model, int64_t gpus, int64_t global_batch, PlanSpec p) {
  PlanFile f;
  f.model = load_model(model);
  f.cluster = load_cluster("dgx-h100-superpod");
  f.gpus = gpus;
  f.job.global_batch = global_batch;
  f.job.framework = "torchtitan";
  apply_stack(load_stack("torchtitan"), f.job);
  p.dp = gpus / (p.tp * p.cp * p.pp);
  p.num_micro_batches = global_batch / (p.micro_batch * p.dp);
  f.plan = p;
  return f;
}

std::string refusal_of(const PlanFile& f) {
  try {
    torchtitan_toml(f, LaunchOptions{});
  } catch (const InputError& e) {
    return e.rule();
  }
  return "";
}

bool bash_n(const std::string& script) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("parallax_torchtitan_" + std::to_string(getpid()) + ".sh");
  std::ofstream(path) << script;
  const int rc = std::system(("bash -n " + path.string()).c_str());
  std::filesystem::remove(path);
  return rc == 0;
}

}  // namespace

TEST_CASE("the TorchTitan stack's launch is the torchtitan export") {
  CHECK(load_stack("torchtitan").capabilities.exporter == Exporter::torchtitan);
  CHECK(std::string(to_string(Exporter::torchtitan)) == "torchtitan");
}

TEST_CASE(
    "TorchTitan degrees multiply to the GPUs; the data-parallel split follows the ZeRO stage") {
  struct Case {
    PlanSpec plan;
    int64_t gpus;
  };
  const Case cases[] = {
      {PlanBuilder(1, 1).zero(3), 8},                             // FSDP2 over 8
      {PlanBuilder(1, 1).zero(2), 8},                             // FSDP2, no reshard
      {PlanBuilder(1, 1).zero(0), 8},                             // DDP over 8, nothing else
      {PlanBuilder(2, 1).sequence_parallel().cp(2).zero(3), 16},  // FSDP2 x cp x tp
      {PlanBuilder(2, 2).sequence_parallel().zero(3).batches(1, 8), 32},  // and a pipeline
  };
  for (const Case& c : cases) {
    const PlanFile f = torchtitan_plan("llama3-8b", c.gpus, 64, c.plan);
    INFO("tp " << f.plan.tp << " cp " << f.plan.cp << " pp " << f.plan.pp << " dp " << f.plan.dp
               << " zero " << f.plan.zero);
    const TomlSections t = read_toml(torchtitan_toml(f, LaunchOptions{}));
    const int64_t replicate = integer(t, "parallelism", "data_parallel_replicate_degree");
    const int64_t shard = integer(t, "parallelism", "data_parallel_shard_degree");
    CHECK(replicate * shard * integer(t, "parallelism", "tensor_parallel_degree") *
              integer(t, "parallelism", "context_parallel_degree") *
              integer(t, "parallelism", "pipeline_parallel_degree") ==
          f.gpus);
    CHECK(integer(t, "parallelism", "tensor_parallel_degree") == f.plan.tp);
    CHECK(integer(t, "parallelism", "context_parallel_degree") == f.plan.cp);
    CHECK(integer(t, "parallelism", "pipeline_parallel_degree") == f.plan.pp);
    CHECK(integer(t, "parallelism", "expert_parallel_degree") == 1);  // a dense model
    if (f.plan.zero == 0) {
      CHECK(replicate == f.plan.dp);  // DDP
      CHECK(shard == 1);
      CHECK(t.at("parallelism").count("fsdp_reshard_after_forward") == 0);
    } else {
      CHECK(replicate == 1);  // FSDP2
      CHECK(shard == f.plan.dp);
      // torchtitan/config/job_config.py: "never" keeps the gathered parameters (ZeRO-2),
      // "default" reshards after forward unless pipelined (ZeRO-3).
      CHECK(value(t, "parallelism", "fsdp_reshard_after_forward") ==
            quoted(f.plan.zero == 2 ? "never" : "default"));
    }
    // The batch: TorchTitan accumulates global / (local x dp) micro-batches without a pipeline;
    // with one, the local batch is the step's micro-batches, cut into pipeline micro-batches.
    const int64_t local = integer(t, "training", "local_batch_size");
    CHECK(integer(t, "training", "global_batch_size") == f.job.global_batch);
    CHECK(local * f.plan.dp * (f.plan.pp > 1 ? 1 : f.plan.num_micro_batches) == f.job.global_batch);
    if (f.plan.pp > 1)
      CHECK(local / integer(t, "parallelism", "pipeline_parallel_microbatch_size") ==
            f.plan.num_micro_batches);
    CHECK(integer(t, "training", "seq_len") == f.model.seq_len);
    CHECK(value(t, "training", "mixed_precision_param") == quoted("bfloat16"));
  }
}

TEST_CASE("TorchTitan's llama3 flavor is the one with the model's shape") {
  // torchtitan/models/llama3/__init__.py (v0.2.2): 8B is dim 4096, 32 layers, 32 heads, 8 KV heads;
  // 70B dim 8192, 80 layers, 64 heads; 405B dim 16384, 126 layers, 128 heads; Llama 3 and 3.1
  // presets alike (TorchTitan's flavors always scale RoPE as Llama 3.1 does).
  const std::pair<const char*, const char*> presets[] = {
      {"llama3-8b", "8B"}, {"llama3.1-8b", "8B"}, {"llama3-70b", "70B"}, {"llama3.1-405b", "405B"}};
  for (const auto& [model, flavor] : presets) {
    const int64_t gpus = std::string(flavor) == "405B" ? 128 : 64;
    PlanSpec p = PlanBuilder(8, std::string(flavor) == "405B" ? 2 : 1).sequence_parallel().zero(3);
    const PlanFile f = torchtitan_plan(model, gpus, 256, p);
    INFO(model);
    const TomlSections t = read_toml(torchtitan_toml(f, LaunchOptions{}));
    CHECK(value(t, "model", "name") == quoted("llama3"));
    CHECK(value(t, "model", "flavor") == quoted(flavor));
  }
  // TorchTitan's debugmodel: dim 256, 6 layers, 16 heads (no GQA), vocab 2048, rope_theta 500000;
  // its FFN is FeedForward's int(2 x 4 x 256 / 3) = 682 rounded up to a multiple of 256: 768.
  PlanFile debug = torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(1, 1).zero(3));
  debug.model.name = "debug";
  debug.model.hidden = 256;
  debug.model.layers = 6;
  debug.model.heads = 16;
  debug.model.kv_heads = 16;
  debug.model.vocab = 2048;
  debug.model.ffn_hidden = 768;
  debug.model.seq_len = 2048;
  CHECK(value(read_toml(torchtitan_toml(debug, LaunchOptions{})), "model", "flavor") ==
        quoted("debugmodel"));
  // One number off and no flavor has the shape: refused, with the nearest flavor and what differs.
  debug.model.ffn_hidden = 1024;
  const std::string why = refusal_of(debug);
  CHECK(why.find("TorchTitan has no flavor with this model's shape") != std::string::npos);
  CHECK(why.find("nearest: debugmodel") != std::string::npos);
  CHECK(why.find("ffn_hidden 1024 (debugmodel: 768)") != std::string::npos);
}

TEST_CASE("what TorchTitan cannot run as planned is refused with the reason") {
  // Llama 2 7B: multi-head attention, FFN 11008, vocab 32000, RoPE base 10000: no llama3 flavor.
  const std::string llama2 =
      refusal_of(torchtitan_plan("llama2-7b", 8, 64, PlanBuilder(1, 1).zero(3)));
  CHECK(llama2.find("TorchTitan has no flavor with this model's shape") != std::string::npos);
  CHECK(llama2.find("nearest: 8B") != std::string::npos);
  // A mixture of experts: the stack's own refusal (its moe_refusal).
  const std::string moe = refusal_of(
      torchtitan_plan("mixtral-8x7b", 64, 512, PlanBuilder(8, 1).sequence_parallel().zero(3)));
  CHECK(moe.find("runs dense models only") != std::string::npos);
  CHECK(moe.find(load_stack("torchtitan").capabilities.moe_refusal) != std::string::npos);
  // Learned positions (GPT-3): TorchTitan's models are RoPE only.
  // A Megatron-LM plan is held to TorchTitan's capability table as TorchTitan's own plans are.
  PlanFile gpt = torchtitan_plan("gpt3-175b", 8, 64, PlanBuilder(8, 1).sequence_parallel());
  gpt.job.framework = "megatron-lm";
  apply_stack(load_stack("megatron-lm"), gpt.job);
  CHECK(refusal_of(gpt).find("has no learned position embedding") != std::string::npos);
  // Interleaving in micro-batch groups other than pp (a Megatron-Core plan).
  PlanSpec groups = PlanBuilder(1, 2).interleaved(2).batches(1, 8);
  groups.microbatch_group = 4;
  PlanFile grouped = torchtitan_plan("llama3-8b", 16, 64, groups);
  grouped.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), grouped.job);
  CHECK(refusal_of(grouped).find("micro-batches in groups of pp") != std::string::npos);
  // ZeRO-1 (Megatron's distributed optimizer): TorchTitan shards all or nothing.
  grouped.plan.microbatch_group = 0;
  grouped.plan.zero = 1;
  CHECK(refusal_of(grouped).find("runs ZeRO stage 0, 2 or 3 (got 1)") != std::string::npos);
  // TP without sequence parallelism: TorchTitan's TP always shards the sequence, which holds less
  // than the plan and moves the same bytes: written, with a note.
  const std::string no_sp = torchtitan_toml(
      torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(2, 1).zero(3)), LaunchOptions{});
  CHECK(no_sp.find("# The plan has tp 2 without sequence parallelism") != std::string::npos);
  // DDP beside tensor parallelism: TorchTitan raises "DDP has not supported > 1D parallelism";
  // ZeRO-0 with context parallelism: TorchTitan shards over cp with FSDP2 (zero0_sole_parallelism).
  const std::string ddp_tp = "runs ZeRO-0 (DDP) only as the sole parallelism";
  CHECK(refusal_of(
            torchtitan_plan("llama3-8b", 16, 64, PlanBuilder(2, 1).sequence_parallel().zero(0)))
            .find(ddp_tp) != std::string::npos);
  CHECK(refusal_of(torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(1, 1).cp(2).zero(0)))
            .find(ddp_tp) != std::string::npos);
  // A plan of another stack is held to TorchTitan's table all the same.
  PlanFile lm = torchtitan_plan("llama3-8b", 16, 64, PlanBuilder(2, 1).sequence_parallel());
  lm.job.framework = "megatron-lm";
  apply_stack(load_stack("megatron-lm"), lm.job);
  CHECK(refusal_of(lm).find(ddp_tp) != std::string::npos);
  // ZeRO-0 with tp and no data parallelism is no DDP at all: TorchTitan runs it.
  CHECK(
      refusal_of(torchtitan_plan("llama3-8b", 2, 64, PlanBuilder(2, 1).sequence_parallel().zero(0)))
          .empty());
  // fp16: TorchTitan's mixed precision is bf16 or fp32.
  PlanFile fp16 = torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(1, 1).zero(3));
  fp16.job.dtype = Dtype::fp16;
  CHECK(refusal_of(fp16).find("not fp16") != std::string::npos);
  // Errors name the format.
  try {
    torchtitan_toml(fp16, LaunchOptions{});
    FAIL("no refusal");
  } catch (const InputError& e) {
    CHECK(e.path() == "--format torchtitan");
  }
}

TEST_CASE("TorchTitan steps: a benchmark's iterations each logged, else the tokens, else 100") {
  PlanFile f = torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(1, 1).zero(3));
  LaunchOptions bench;
  bench.benchmark_iters = 30;
  const TomlSections b = read_toml(torchtitan_toml(f, bench));
  CHECK(integer(b, "training", "steps") == bench.benchmark_iters);
  CHECK(integer(b, "metrics", "log_freq") == 1);
  const TomlSections measurement = read_toml(torchtitan_toml(f, LaunchOptions{}));
  CHECK(integer(measurement, "training", "steps") == 100);  // no tokens: a measurement run
  CHECK(integer(measurement, "metrics", "log_freq") == 10);
  f.job.tokens = 1e9;
  const double tokens_per_step = static_cast<double>(f.job.global_batch * f.model.seq_len);
  CHECK(integer(read_toml(torchtitan_toml(f, LaunchOptions{})), "training", "steps") ==
        static_cast<int64_t>(std::ceil(f.job.tokens / tokens_per_step)));
  // The benchmark wins over the tokens.
  CHECK(integer(read_toml(torchtitan_toml(f, bench)), "training", "steps") ==
        bench.benchmark_iters);
}

TEST_CASE(
    "TorchTitan pipelines: the schedule by PyTorch's name and the plan's split as model parts") {
  // llama3-8b's 32 layers on pp 4 x vpp 2: 8 virtual stages of 4 layers; rank s holds stages s and
  // s + 4 (TorchTitan's loop placement), stage v layers 4v to 4v + 3.
  const PlanFile f =
      torchtitan_plan("llama3-8b", 32, 128, PlanBuilder(1, 4).interleaved(2).zero(3).batches(2, 8));
  const TomlSections t = read_toml(torchtitan_toml(f, LaunchOptions{}));
  CHECK(value(t, "parallelism", "pipeline_parallel_schedule") == quoted("Interleaved1F1B"));
  CHECK(integer(t, "parallelism", "pipeline_parallel_microbatch_size") == f.plan.micro_batch);
  CHECK(integer(t, "training", "local_batch_size") ==
        f.plan.micro_batch * f.plan.num_micro_batches);
  const std::string parts = value(t, "parallelism", "module_fqns_per_model_part");
  const int64_t stages = f.plan.pp * f.plan.vpp;
  const int64_t per_stage = f.model.layers / stages;
  std::string expected = "[";
  for (int64_t v = 0; v < stages; ++v) {
    std::string line = v == 0 ? "\"tok_embeddings\", " : "";
    for (int64_t k = 0; k < per_stage; ++k)
      line +=
          "\"layers." + std::to_string(v * per_stage + k) + "\"" + (k + 1 < per_stage ? ", " : "");
    if (v + 1 == stages) line += ", \"norm\", \"output\"";
    expected += "[" + line + "],";
  }
  CHECK(parts == expected + "]");
  // GPipe and 1F1B, one stage per rank.
  const PlanFile gpipe = torchtitan_plan(
      "llama3-8b", 16, 64, PlanBuilder(1, 2).schedule(Schedule::gpipe).zero(3).batches(1, 8));
  CHECK(value(read_toml(torchtitan_toml(gpipe, LaunchOptions{})), "parallelism",
              "pipeline_parallel_schedule") == quoted("GPipe"));
}

TEST_CASE("TorchTitan recompute, compile and fp8 follow the plan and the stack") {
  PlanFile f = torchtitan_plan("llama3-8b", 8, 64,
                               PlanBuilder(1, 1).zero(3).recompute(Recompute::selective));
  TomlSections t = read_toml(torchtitan_toml(f, LaunchOptions{}));
  CHECK(value(t, "activation_checkpoint", "mode") == quoted("selective"));
  CHECK(value(t, "activation_checkpoint", "selective_ac_option") == quoted("op"));
  CHECK(value(t, "compile", "enable") == "false");  // the stack's kernels are eager
  CHECK(value(t, "checkpoint", "enable") == "false");
  CHECK(t.at("model").count("converters") == 0);  // bf16: no float8 converter
  f.plan.recompute = Recompute::full;
  t = read_toml(torchtitan_toml(f, LaunchOptions{}));
  CHECK(value(t, "activation_checkpoint", "mode") == quoted("full"));
  f.plan.recompute = Recompute::none;
  f.job.kernels = Kernels::fused;  // a run with torch.compile
  f.job.dtype = Dtype::fp8;
  t = read_toml(torchtitan_toml(f, LaunchOptions{}));
  CHECK(value(t, "activation_checkpoint", "mode") == quoted("none"));
  CHECK(value(t, "compile", "enable") == "true");
  // docs/float8.md of v0.2.2: --model.converters="quantize.linear.float8", the output layer kept.
  CHECK(value(t, "model", "converters") == "[\"quantize.linear.float8\"]");
  CHECK(value(t, "quantize.linear.float8", "filter_fqns") == "[\"output\"]");
  CHECK(value(t, "training", "mixed_precision_param") == quoted("bfloat16"));
  // Block recompute of some layers: TorchTitan's full checkpointing wraps every block.
  f.plan.recompute = Recompute::full;
  f.plan.recompute_layers = 4;
  CHECK(refusal_of(f).find("wraps every transformer block") != std::string::npos);
}

TEST_CASE("the TorchTitan launch writes its config and runs torchrun, under SLURM across hosts") {
  const PlanFile one_host = torchtitan_plan("llama3-8b", 8, 64, PlanBuilder(1, 1).zero(3));
  const std::string s = torchtitan_script(one_host, LaunchOptions{});
  CHECK(bash_n(s));
  CHECK(s.find("set -euo pipefail") != std::string::npos);
  CHECK(s.find("TORCHTITAN_DIR=${TORCHTITAN_DIR:-") != std::string::npos);
  CHECK(s.find("torchrun --nnodes 1 --nproc-per-node 8") != std::string::npos);
  CHECK(s.find("-m torchtitan.train --job.config_file \"$CONFIG\"") != std::string::npos);
  CHECK(s.find(torchtitan_toml(one_host, LaunchOptions{})) !=
        std::string::npos);  // the heredoc's body
  CHECK(s.find("#SBATCH") == std::string::npos);
  const PlanFile hosts =
      torchtitan_plan("llama3-8b", 64, 256, PlanBuilder(2, 1).sequence_parallel().zero(3));
  const std::string m = torchtitan_script(hosts, LaunchOptions{});
  CHECK(bash_n(m));
  CHECK(m.find("#SBATCH --nodes=" + std::to_string(hosts.gpus / hosts.cluster.host_gpus())) !=
        std::string::npos);
  CHECK(m.find("srun ") != std::string::npos);
  CHECK(m.find("--rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\"") != std::string::npos);
  CHECK(m.find("--nproc-per-node " + std::to_string(hosts.cluster.host_gpus())) !=
        std::string::npos);
  // export_text's formats are these two.
  CHECK(export_text(hosts, "torchtitan", LaunchOptions{}) ==
        torchtitan_toml(hosts, LaunchOptions{}));
  CHECK(export_text(hosts, "torchtitan-launch", LaunchOptions{}) == m);
}

TEST_CASE("the TorchTitan job config parses as TOML (Python's tomllib, where there is one)") {
  if (std::system("python3 -c 'import tomllib' > /dev/null 2>&1") != 0) {
    WARN("python3 with tomllib not found: TOML syntax check skipped");
    return;
  }
  const PlanFile f =
      torchtitan_plan("llama3-8b", 32, 128, PlanBuilder(1, 4).interleaved(2).zero(3).batches(2, 8));
  const auto path = std::filesystem::temp_directory_path() /
                    ("parallax_torchtitan_" + std::to_string(getpid()) + ".toml");
  std::ofstream(path) << torchtitan_toml(f, LaunchOptions{});
  const std::string check =
      "python3 -c 'import sys, tomllib; c = tomllib.load(open(sys.argv[1], \"rb\")); "
      "sys.exit(0 if len(c[\"parallelism\"][\"module_fqns_per_model_part\"]) == " +
      std::to_string(f.plan.pp * f.plan.vpp) + " else 1)' " + path.string();
  const int rc = std::system(check.c_str());
  std::filesystem::remove(path);
  CHECK(rc == 0);
}

}  // namespace parallax::torchtitan_test
