// `parallax checkpoint export --hf` (issue 20): checkpoints written by real runs under mpirun,
// exported, then judged by tools that share no code with Parallax: tests/reference/hf_dir.py (a
// reader written from the safetensors and transformers index specifications, which also
// reassembles the checkpoint's shards itself) and tests/reference/hf_loss.py (the project's
// PyTorch reference, float64, loading the export through hf_dir.py and its config.json).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "mpi_run.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/checkpoint/hf_export.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

using namespace parallax::test;
namespace fs = std::filesystem;

namespace {

const std::string kSource = PARALLAX_SOURCE_DIR;
const std::string kPython = PARALLAX_TORCH_PYTHON;

// n tokens below vocab from a fixed linear congruential sequence, raw little-endian uint16.
std::string write_tokens(const std::string& dir, int64_t vocab, int n = 600) {
  const std::string path = dir + "/tokens.bin";
  std::ofstream out(path, std::ios::binary);
  uint64_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = (x * 1103515245 + 12345) % 2147483648ULL;
    const auto t = static_cast<uint16_t>((x >> 8) % static_cast<uint64_t>(vocab));
    const char b[2] = {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
    out.write(b, 2);
  }
  return path;
}

int export_hf(const std::string& checkpoint, const std::string& out, const std::string& flags,
              const std::string& log) {
  return shell(std::string(PARALLAX_BIN) + " checkpoint export " + checkpoint + " --hf " + out + " " + flags +
               " > " + log + " 2>&1");
}

// hf_dir.py check OUT --against STEP_DIR: 0 when the export is valid and equals the checkpoint.
int hf_dir_check(const std::string& out, const std::string& step_dir, const std::string& log,
                 const std::string& flags = "") {
  return shell(kPython + " " + kSource + "/tests/reference/hf_dir.py check " + out + " --against " + step_dir +
               " " + flags + " > " + log + " 2>&1");
}

// The PyTorch reference's loss of the export on global sequences first .. first+count-1.
double reference_loss(const std::string& out, const std::string& tokens, int first, int count,
                      const std::string& log) {
  const int rc = shell(kPython + " " + kSource + "/tests/reference/hf_loss.py " + out + " --tokens " + tokens +
                       " --first-sequence " + std::to_string(first) + " --sequences " + std::to_string(count) +
                       " > " + log + " 2>&1");
  INFO(slurp(log));
  REQUIRE(rc == 0);
  return std::stod(slurp(log));
}

size_t count_files(const std::string& dir, const std::string& suffix) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    n += f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return n;
}

// Trains 3 steps of `model` on 4 ranks with a checkpoint after step 2; the loss of step 3 is
// computed with step 2's weights on global sequences 8..11 (global batch 4).
struct Trained {
  std::string dir, tokens, step2;
  double loss3 = 0;
};

Trained train(const std::string& name, const std::string& model, int64_t vocab, int tp, int pp, int dp) {
  Trained t;
  t.dir = scratch_dir(name);
  t.tokens = write_tokens(t.dir, vocab);
  const std::string plan = make_plan(t.dir, "plan", tp, pp, dp, "", model);
  const int rc = mpirun(tp * pp * dp,
                        "--plan " + plan + " --steps 3 --checkpoint-every 2 --checkpoint-dir " + t.dir +
                            "/ckpt --data " + t.tokens + " --out " + t.dir + "/m.json",
                        t.dir + "/run.log");
  INFO(slurp(t.dir + "/run.log"));
  REQUIRE(rc == 0);
  t.step2 = t.dir + "/ckpt/step_000002";
  REQUIRE(fs::exists(t.step2 + "/COMPLETE"));
  const auto l = losses(t.dir + "/m.json");
  REQUIRE(l.size() == 3);
  t.loss3 = l[2];
  return t;
}

}  // namespace

TEST_CASE("a tp=2 pp=2 checkpoint exported for Hugging Face is its parameters, and PyTorch reproduces the loss",
          "[executor][mpi][reference][export][leakcheck]") {
  // gpt-micro: tied embeddings, vocab 128 padded to 256 by tp=2 (128 rows to remove).
  const Trained t = train("hf_export_tied", kSource + "/tests/reference/micro_model.json", 128, 2, 2, 1);
  const std::string out = t.dir + "/hf";
  REQUIRE(export_hf(t.step2, out, "--max-shard-size 64KB", t.dir + "/export.log") == 0);
  // Sharded as transformers does: an index and several model-0000K-of-0000N files.
  CHECK(fs::exists(out + "/model.safetensors.index.json"));
  CHECK(count_files(out, ".safetensors") >= 2);
  CHECK_FALSE(fs::exists(out + "/model.safetensors"));
  {
    // 64KB = 64000 bytes: mlp.c_fc.weight (64 x 256 floats, 65536 bytes) must sit alone.
    const int rc = hf_dir_check(out, t.step2, t.dir + "/check.log", "--max-shard-bytes 64000");
    INFO(slurp(t.dir + "/check.log"));
    CHECK(rc == 0);
  }
  const double loss = reference_loss(out, t.tokens, 8, 4, t.dir + "/loss.log");
  INFO("executor " << t.loss3 << ", PyTorch on the export " << loss);
  CHECK(std::abs(loss - t.loss3) <= 1e-6 * std::abs(t.loss3));

  // bf16: every value rounded to nearest even (hf_dir.py rounds the checkpoint's floats itself).
  REQUIRE(export_hf(t.step2, t.dir + "/hf16", "--dtype bf16", t.dir + "/export16.log") == 0);
  const int rc16 = hf_dir_check(t.dir + "/hf16", t.step2, t.dir + "/check16.log");
  INFO(slurp(t.dir + "/check16.log"));
  CHECK(rc16 == 0);
}

TEST_CASE("untied embeddings and a padded vocabulary export as GPT-2 with lm_head, pp=2 dp=2",
          "[executor][mpi][reference][export]") {
  const Trained t = train("hf_export_untied", kSource + "/tests/executor/data/gpt-micro-untied.json", 100, 1, 2, 2);
  const std::string out = t.dir + "/hf";
  // The checkpoint directory itself: its newest complete step (3), not step 2.
  REQUIRE(export_hf(t.dir + "/ckpt", out, "", t.dir + "/export.log") == 0);
  CHECK(fs::exists(out + "/model.safetensors"));  // one file under the default 5GB: no index
  CHECK_FALSE(fs::exists(out + "/model.safetensors.index.json"));
  CHECK(hf_dir_check(out, t.dir + "/ckpt/step_000003", t.dir + "/check3.log") == 0);
  CHECK(hf_dir_check(out, t.step2, t.dir + "/check2.log") == 1);  // step 2's values differ

  const std::string out2 = t.dir + "/hf2";
  REQUIRE(export_hf(t.step2, out2, "", t.dir + "/export2.log") == 0);
  const double loss = reference_loss(out2, t.tokens, 8, 4, t.dir + "/loss.log");
  INFO("executor " << t.loss3 << ", PyTorch on the export " << loss);
  CHECK(std::abs(loss - t.loss3) <= 1e-6 * std::abs(t.loss3));
}

TEST_CASE("a Llama checkpoint exports as LlamaForCausalLM, and PyTorch reproduces the reference's loss",
          "[executor][reference][export]") {
  // The PyTorch reference's own checkpoint (tests/reference/llama_reference.py: GQA 4 heads over 2
  // KV heads, RoPE base 500000 with Llama 3.1 scaling, SwiGLU, RMSNorm, untied, no biases) and its
  // float64 loss on the first 4 sequences of its tokens, computed there under the executor's names.
  // Exported, read back by hf_dir.py and renamed by hf_loss.py from Llama's structure, the loss
  // must be the same: every tensor went to the right HF name and shape, and config.json carries the
  // RoPE base, the scaling, the KV heads and the epsilon the reference needs.
  const std::string golden = kSource + "/tests/reference/golden_llama";
  const std::string dir = scratch_dir("hf_export_llama");
  const std::string out = dir + "/hf";
  REQUIRE(export_hf(golden + "/ckpt", out, "--max-shard-size 200KB", dir + "/export.log") == 0);
  CHECK(slurp(dir + "/export.log").find("as LlamaForCausalLM (untied embeddings)") != std::string::npos);
  CHECK(fs::exists(out + "/model.safetensors.index.json"));
  {
    const int rc = hf_dir_check(out, golden + "/ckpt/step_000000", dir + "/check.log", "--max-shard-bytes 200000");
    INFO(slurp(dir + "/check.log"));
    CHECK(rc == 0);
    CHECK(slurp(dir + "/check.log").find("valid Llama directory") != std::string::npos);
  }
  const std::string config = slurp(out + "/config.json");
  for (const char* want : {"\"rope_theta\": 500000.0", "\"num_key_value_heads\": 2", "\"rope_type\": \"llama3\"",
                           "\"original_max_position_embeddings\": 1024", "\"rms_norm_eps\": 1e-05",
                           "\"tie_word_embeddings\": false", "\"attention_bias\": false"}) {
    INFO(want);
    CHECK(config.find(want) != std::string::npos);
  }
  const auto meta = parallax::exec::read_shard_metadata(golden + "/golden.safetensors");
  const double want = std::stod(meta.at("loss"));
  const double loss = reference_loss(out, golden + "/tokens.bin", 0, 4, dir + "/loss.log");
  INFO("reference " << want << ", PyTorch on the export " << loss);
  CHECK(std::abs(loss - want) <= 1e-9 * want);
  // Without the scaling (or at the default base) the loss differs by far more than that.
  CHECK(std::abs(std::stod(meta.at("loss_unscaled")) - want) > 1e-4 * want);
}

TEST_CASE("shard sizes read as transformers' convert_file_size_to_int", "[export]") {
  using parallax::exec::parse_byte_size;
  // Its docstring: "1MiB" -> 1048576; decimal units are powers of 10; "Gb"/"Mb"/"Kb" are bits.
  CHECK(parse_byte_size("1MiB", "f") == 1'048'576ULL);
  CHECK(parse_byte_size("5GB", "f") == 5'000'000'000ULL);
  CHECK(parse_byte_size("500MB", "f") == 500'000'000ULL);
  CHECK(parse_byte_size("64KB", "f") == 64'000ULL);
  CHECK(parse_byte_size("10GiB", "f") == 10ULL * 1024 * 1024 * 1024);
  CHECK(parse_byte_size("64kib", "f") == 65'536ULL);
  CHECK(parse_byte_size("5GB", "f") == parse_byte_size("5gB", "f"));
  CHECK(parse_byte_size("5Gb", "f") == 625'000'000ULL);
  CHECK(parse_byte_size("4096", "f") == 4'096ULL);
  for (const char* bad : {"", "GB", "5 GB", "-5GB", "0", "0MB", "5.5GB", "5TB", "9999999999999GB"})
    CHECK_THROWS_AS(parse_byte_size(bad, "f"), parallax::InputError);
}

TEST_CASE("export refusals write nothing and touch nothing", "[executor][mpi][export][slow]") {
  const std::string dir = scratch_dir("hf_export_refusals");
  const std::string tokens = write_tokens(dir, 128);
  const std::string plan = make_plan(dir, "plan", 1, 1, 1, "", kSource + "/tests/reference/micro_model.json");
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 1 --checkpoint-dir " + dir + "/ckpt --data " + tokens, dir + "/run.log") == 0);
  const std::string step = dir + "/ckpt/step_000001";
  const std::string log = dir + "/export.log";

  SECTION("an output directory that is not empty") {
    fs::create_directories(dir + "/mine");
    std::ofstream(dir + "/mine/notes.txt") << "the user's\n";
    CHECK(export_hf(step, dir + "/mine", "", log) == 2);
    CHECK(slurp(log).find("exists and is not an empty directory") != std::string::npos);
    CHECK(count_files(dir + "/mine", "") == 1);
    CHECK(slurp(dir + "/mine/notes.txt") == "the user's\n");
  }
  SECTION("an empty output directory is filled") {
    fs::create_directories(dir + "/empty");
    CHECK(export_hf(step, dir + "/empty", "", log) == 0);
    CHECK(fs::exists(dir + "/empty/config.json"));
  }
  SECTION("a corrupted shard: no output, no temporary directory left") {
    fs::copy(step, dir + "/bad", fs::copy_options::recursive);
    const std::string shard = dir + "/bad/model_tp0_pp0.safetensors";
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('\x7f');
    f.close();
    CHECK(export_hf(dir + "/bad", dir + "/out", "", log) == 2);
    CHECK(slurp(log).find("checksum") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out"));
    for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find("out.tmp") == std::string::npos);
  }
  SECTION("an interrupted checkpoint (no COMPLETE)") {
    fs::copy(step, dir + "/step_000009", fs::copy_options::recursive);
    fs::remove(dir + "/step_000009/COMPLETE");
    CHECK(export_hf(dir + "/step_000009", dir + "/out", "", log) == 2);
    CHECK(slurp(log).find("no COMPLETE") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
  SECTION("a model neither GPT-2 nor Llama (SwiGLU, RMSNorm, learned positions)") {
    const std::string splan =
        make_plan(dir, "swiglu", 1, 1, 1, "", kSource + "/tests/executor/data/gpt-micro-swiglu.json");
    REQUIRE(mpirun(1, "--plan " + splan + " --steps 1 --checkpoint-dir " + dir + "/cks --data " + tokens,
                   dir + "/run_s.log") == 0);
    CHECK(export_hf(dir + "/cks", dir + "/out", "", log) == 2);
    CHECK(slurp(log).find("writes the GPT-2 family (gelu, learned positions, layernorm, multi-head attention) or the "
                          "Llama family (swiglu, rope, rmsnorm); gpt-micro-swiglu has swiglu, rmsnorm (not GPT-2) and "
                          "learned positions (not Llama)") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
  SECTION("a shard size or dtype it cannot write") {
    CHECK(export_hf(step, dir + "/out", "--max-shard-size 5XB", log) == 2);
    CHECK(export_hf(step, dir + "/out", "--dtype fp8", log) == 2);
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
}
