// `parallax predict --from-megatron-args`: an existing Megatron-LM launch evaluated as it is.
// The launch script is written here in the format of Megatron-LM's own example,
// examples/gpt3/train_gpt3_175b_distributed.sh (NVIDIA/Megatron-LM main, 2026): bash arrays of
// flags with comments, torchrun's own arguments, and pretrain_gpt.py "${ARRAYS[@]}".
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "cli_runner.hpp"

namespace {

using Result = parallax::test::CliResult;
Result run(const std::string& args) { return parallax::test::run_cli(args); }

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parallax_import_" + std::to_string(getpid()) + "_" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

std::string launch_script(const std::string& model_parallel_args) {
  return R"(#!/bin/bash
# Runs the "175B" parameter model
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # Can use (flash/fused/unfused/local)
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --train-iters 500000
    --weight-decay 0.1
    --clip-grad 1.0
    --bf16
    --lr 6.0e-5
    --lr-decay-style cosine
)
MODEL_PARALLEL_ARGS=(
)" + model_parallel_args + R"(
)
DATA_ARGS=(
    --data-path $DATA_PATH
    --vocab-file $VOCAB_FILE
    --merge-file $MERGE_FILE
    --split 949,50,1
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]}
)";
}

std::string line_with(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return "absent";
  return text.substr(at, text.find('\n', at) - at);
}

}  // namespace

TEST_CASE("predict evaluates Megatron-LM's own launch script format as the same flags would") {
  const std::string script = temp_file(
      "gpt3.sh", launch_script("\t--tensor-model-parallel-size 8\n\t--pipeline-model-parallel-size 16\n"));
  const Result r = run("predict --from-megatron-args " + script + " --gpus 1024");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tp=8 pp=16 dp=8 mbs=1 m=192") != std::string::npos);
  // What the script does not say about the plan is listed, once, on stderr.
  CHECK(r.err.find("--save") == std::string::npos);
  CHECK(r.err.find("--weight-decay") != std::string::npos);
  CHECK(r.err.find("--nproc_per_node") != std::string::npos);
  // The same model and plan through the flags: GPT-3 175B's shape (Brown et al. 2020), GPT-2's
  // 50,257-token vocabulary (--vocab-file), Megatron's defaults (ffn 4h, dropout 0.1).
  const std::string model = temp_file(
      "gpt3.json", R"({"name": "megatron-args", "layers": 96, "hidden": 12288, "heads": 96,
                       "seq_len": 2048, "vocab": 50257, "ffn_hidden": 49152, "dropout": 0.1})");
  const Result f = run("predict --model " + model + " --gpus 1024 --global-batch 1536 --tp 8 --pp 16 "
                       "--mbs 1 --recompute none --tokens " + std::to_string(500000LL * 1536 * 2048));
  REQUIRE(f.code == 0);
  CHECK(line_with(r.out, "iteration time") == line_with(f.out, "iteration time"));
  CHECK(line_with(r.out, "tokens/s") == line_with(f.out, "tokens/s"));
  // From stdin.
  const Result s = run("predict --from-megatron-args - --gpus 1024 < " + script);
  CHECK(s.code == 0);
  CHECK(line_with(s.out, "iteration time") == line_with(f.out, "iteration time"));
}

TEST_CASE("an imported Megatron-LM launch the model cannot express gets one line and exit 2") {
  // Context parallelism is read (issue 26); a ring other than the p2p one Parallax models is not.
  const std::string cp = temp_file(
      "cp.sh", launch_script("--tensor-model-parallel-size 8 --context-parallel-size 2 --cp-comm-type a2a"));
  const Result c = run("predict --from-megatron-args " + cp + " --gpus 1024");
  CHECK(c.code == 2);
  CHECK(c.err.find("--cp-comm-type: only p2p, the ring Parallax models, is supported (got \"a2a\")") !=
        std::string::npos);
  const Result v = run("predict --from-megatron-args " + temp_file("var.sh", launch_script("--tensor-model-parallel-size $TP")) +
                       " --gpus 1024");
  CHECK(v.code == 2);
  CHECK(v.err.find("--tensor-model-parallel-size: must be an integer (got \"$TP\")") != std::string::npos);
  // A Hugging Face tokenizer's vocabulary is not in the arguments: --vocab-size is needed.
  const Result t = run("predict --gpus 8 --from-megatron-args " +
                       temp_file("hf.txt", "--num-layers 2 --hidden-size 256 --num-attention-heads 4 "
                                           "--seq-length 128 --global-batch-size 8 --micro-batch-size 1 "
                                           "--tokenizer-type HuggingFaceTokenizer --tokenizer-model x"));
  CHECK(t.code == 2);
  CHECK(t.err.find("--vocab-size: is needed") != std::string::npos);
}

TEST_CASE("a recipe file gives the flags' values: YAML or JSON, typed flags win, bad keys named") {
  const std::string yaml = temp_file("recipe.yaml", R"(# Llama 2 70B on 512 H100s
model: llama2-70b
cluster: dgx-h100-superpod
gpus: 512
global_batch: 1024
stack: megatron-core
tp: 8
pp: 4
sp: true
recompute: selective
zero: 1
)");
  const Result r = run("predict --from-recipe " + yaml);
  REQUIRE(r.code == 0);
  const Result f = run("predict --model llama2-70b --cluster dgx-h100-superpod --gpus 512 --global-batch 1024 "
                       "--stack megatron-core --tp 8 --pp 4 --sp --recompute selective --zero 1");
  REQUIRE(f.code == 0);
  CHECK(line_with(r.out, "iteration time") == line_with(f.out, "iteration time"));
  CHECK(line_with(r.out, "plan ") == line_with(f.out, "plan "));
  // JSON is YAML too.
  const std::string json = temp_file(
      "recipe.json", R"({"model": "llama2-70b", "cluster": "dgx-h100-superpod", "gpus": 512,
                        "global_batch": 1024, "stack": "megatron-core", "tp": 8, "pp": 4,
                        "sp": true, "recompute": "selective", "zero": 1})");
  const Result j = run("predict --from-recipe " + json);
  REQUIRE(j.code == 0);
  CHECK(line_with(j.out, "iteration time") == line_with(f.out, "iteration time"));
  // A flag typed on the command line wins over the file.
  const Result t = run("predict --from-recipe " + yaml + " --tp 4");
  REQUIRE(t.code == 0);
  CHECK(line_with(t.out, "plan ").find("tp=4 pp=4 dp=32") != std::string::npos);
  // Errors name the file and the key.
  const Result k = run("predict --from-recipe " + temp_file("typo.yaml", "tq: 8\n"));
  CHECK(k.code == 2);
  CHECK(k.err.find("typo.yaml: $.tq: unknown key") != std::string::npos);
  const Result d = run("predict --from-recipe " + yaml + " --gpus 500");
  CHECK(d.code == 2);
  CHECK(d.err.find("--gpus") != std::string::npos);  // the typed flag's own value, named as a flag
  const Result v = run("predict --from-recipe " + temp_file("div.yaml", "model: llama2-70b\ncluster: dgx-h100-superpod\n"
                                                                      "gpus: 512\nglobal_batch: 1024\ntp: 3\npp: 4\n"));
  CHECK(v.code == 2);
  CHECK(v.err.find("div.yaml: $.") != std::string::npos);
  const Result m = run("predict --from-recipe " + temp_file("bad.yaml", "tp: [3\n"));
  CHECK(m.code == 2);
  CHECK(m.err.find("bad.yaml: $: malformed YAML at line 2") != std::string::npos);
}

TEST_CASE("a recipe's expert keys (ep, etp, moe_dispatcher) give the flags' values") {
  // Megatron-Bridge's H100 Qwen3-30B-A3B recipe since February 2026: ep 16 over two nodes,
  // the flex dispatcher with HybridEP.
  const std::string yaml = temp_file("moe.yaml", R"(model: qwen3-30b-a3b
cluster: dgx-h100-superpod
gpus: 16
global_batch: 1024
seq_len: 4096
stack: megatron-core
dtype: fp8
recompute: none
zero: 1
tp: 1
pp: 1
mbs: 1
ep: 16
etp: 1
moe_dispatcher: hybridep
)");
  const std::string flags = "predict --model qwen3-30b-a3b --cluster dgx-h100-superpod --gpus 16 --global-batch 1024 "
                            "--seq-len 4096 --stack megatron-core --dtype fp8 --recompute none --zero 1 --tp 1 --pp 1 --mbs 1 "
                            "--ep 16 --etp 1";
  const Result r = run("predict --from-recipe " + yaml);
  REQUIRE(r.code == 0);
  const Result f = run(flags + " --moe-dispatcher hybridep");
  REQUIRE(f.code == 0);
  CHECK(line_with(r.out, "plan ") == line_with(f.out, "plan "));
  CHECK(line_with(r.out, "iteration time") == line_with(f.out, "iteration time"));
  // Without the key the recipe runs the default dispatcher, which sends every routed row: slower.
  const Result a = run(flags);
  REQUIRE(a.code == 0);
  CHECK(line_with(a.out, "iteration time") != line_with(r.out, "iteration time"));
  const Result bad = run("predict --from-recipe " + temp_file("disp.yaml", "moe_dispatcher: ncclep\n"));
  CHECK(bad.code == 2);
  CHECK(bad.err.find("disp.yaml: $.moe_dispatcher") != std::string::npos);
}

TEST_CASE("an imported model Megatron-LM itself would refuse gets the model file's rule, named by its flag") {
  // Megatron-LM asserts these (arguments.py: hidden % heads without --kv-channels;
  // TransformerConfig: heads % query groups, top-k within the experts); the model reader has the
  // same rules, and the import now runs them.
  const std::string head = "--num-layers 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
                           "--global-batch-size 8 --bf16 --vocab-size 32000 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--hidden-size 1000 --num-attention-heads 3",
       "megatron args: --num-attention-heads: hidden (1000) must be divisible by heads (3)"},
      {"--hidden-size 1024 --num-attention-heads 8 --group-query-attention --num-query-groups 3",
       "megatron args: --num-query-groups: must divide heads (8) (got 3)"},
      {"--hidden-size 1024 --num-attention-heads 8 --num-experts 8 --moe-router-topk 9 "
       "--moe-token-dispatcher-type alltoall",
       "megatron args: --moe-router-topk: must be <= num_experts (8) (got 9)"},
  };
  int n = 0;
  for (const auto& [flags, message] : cases) {
    INFO(flags);
    const Result r = run("predict --gpus 8 --stack megatron-core --from-megatron-args " +
                         temp_file("bad" + std::to_string(n++) + ".txt", head + flags));
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
