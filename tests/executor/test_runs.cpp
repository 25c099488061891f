// Whole runs: determinism, checkpoint save/resume/reshard, refused corrupt checkpoints, bad input
// (one line on rank 0, exit 2 on every rank), measurements and trace files.
#include <catch2/catch.hpp>

#include <chrono>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "mpi_run.hpp"
#include "parallax/executor/checkpoint/checkpoint.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

using namespace parallax::test;
namespace fs = std::filesystem;

TEST_CASE("the same plan and seed give bit-identical losses", "[executor][mpi]") {
  const std::string dir = scratch_dir("determinism");
  const std::string plan = make_plan(dir, "p", 2, 1, 1, "");
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --out " + dir + "/a.json", dir + "/a.log") == 0);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --out " + dir + "/b.json", dir + "/b.log") == 0);
  CHECK(losses(dir + "/a.json") == losses(dir + "/b.json"));
}

TEST_CASE("save at step 3 and resume: steps 4-6 are bit-identical", "[executor][mpi][leakcheck]") {
  const std::string dir = scratch_dir("resume");
  const std::string plan = make_plan(dir, "p", 1, 1, 2, "--zero 1");
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 6 --out " + dir + "/full.json", dir + "/f.log") == 0);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --checkpoint-dir " + dir + "/ck", dir + "/a.log") == 0);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --resume --checkpoint-dir " + dir +
                        "/ck --out " + dir + "/resumed.json",
                 dir + "/b.log") == 0);
  const auto full = losses(dir + "/full.json");
  const auto resumed = losses(dir + "/resumed.json");
  REQUIRE(resumed.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(resumed[i] == full[i + 3]);
}

namespace {

// A plan of `model`: a mixture-of-experts model file through make_moe_plan (predict costs none).
std::string any_plan(const std::string& dir, const std::string& name, int tp, int pp, int dp,
                     const std::string& flags, const std::string& model, int ep = 1) {
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".json") == 0 &&
      slurp(model).find("\"moe\"") != std::string::npos)
    return make_moe_plan(dir, name, tp, pp, dp, flags, model, 1, ep);
  return make_plan(dir, name, tp, pp, dp, flags, model);
}

// Train plan `a` 4 steps straight, and 3 steps with a checkpoint; resume the checkpoint under plan
// `b` for one step: its loss must equal the straight run's 4th.
// Returns the checkpoint's step directory.
std::string check_reshard(const std::string& name, int a_tp, int a_pp, int a_dp, int b_tp, int b_pp,
                          int b_dp, const std::string& b_flags, const std::string& model = "gpt-tiny",
                          int a_ep = 1, int b_ep = 1) {
  const std::string dir = scratch_dir(name);
  const std::string a = any_plan(dir, "a", a_tp, a_pp, a_dp, "", model, a_ep);
  const std::string b = any_plan(dir, "b", b_tp, b_pp, b_dp, b_flags, model, b_ep);
  const int np_a = a_tp * a_pp * a_dp;
  REQUIRE(mpirun(np_a, "--plan " + a + " --steps 4 --out " + dir + "/full.json", dir + "/f.log") == 0);
  REQUIRE(mpirun(np_a, "--plan " + a + " --steps 3 --checkpoint-dir " + dir + "/ck", dir + "/a.log") == 0);
  REQUIRE(mpirun(b_tp * b_pp * b_dp, "--plan " + b + " --steps 1 --resume --checkpoint-dir " + dir +
                                          "/ck --out " + dir + "/b.json",
                 dir + "/b.log") == 0);
  const double want = losses(dir + "/full.json")[3];
  CHECK(std::abs(losses(dir + "/b.json")[0] - want) <= 1e-5 * want);
  return dir + "/ck/step_000003";
}

}  // namespace

TEST_CASE("a checkpoint of one plan loads into another plan", "[executor][mpi]") {
  check_reshard("reshard", 2, 1, 1, 1, 1, 2, "--zero 1");
}

TEST_CASE("a checkpoint of (2,2,1) loads into (1,1,2) with the same loss", "[executor][mpi]") {
  check_reshard("reshard_pp", 2, 2, 1, 1, 1, 2, "");
}

// gpt-micro-swiglu (SwiGLU, RMSNorm): a Llama-family model, so its checkpoints carry Hugging Face
// Llama names with c_fc stored as gate_proj and up_proj, each tp shard holding half of each. Its
// vocabulary (128) is padded to 256 rows at tp=2 and 128 at tp=1: the padding differs too.
TEST_CASE("a Llama-layout checkpoint reshards: tp=2 to tp=1 dp=2 and tp=1 dp=2 to tp=2", "[executor][mpi]") {
  const std::string model = std::string(PARALLAX_SOURCE_DIR) + "/tests/executor/data/gpt-micro-swiglu.json";
  const std::string step = check_reshard("reshard_llama", 2, 1, 1, 1, 1, 2, "--zero 1", model);
  const auto stored = parallax::exec::read_stored_tensors(step);
  CHECK(stored.count("model.layers.1.mlp.gate_proj.weight") == 1);
  CHECK(stored.count("optimizer.v.model.layers.1.self_attn.k_proj.weight") == 1);
  CHECK(stored.count("h.1.mlp.c_fc.weight") == 0);
  CHECK(stored.at("model.layers.1.mlp.up_proj.weight").shape == std::vector<int64_t>{256, 64});  // (F, C)
  check_reshard("reshard_llama_back", 1, 1, 2, 2, 1, 1, "", model);
}

// moe-tiny: the router, every expert and the shared experts stored under DeepSeek-V3's Hugging Face
// names (gate | up of each expert stored apart, each tp shard holding half of each), resharded
// from tp=2 pp=2 to dp=2 and back; and a save at step 3 resumed under the same plan is
// bit-identical to the uninterrupted run.
TEST_CASE("a mixture-of-experts checkpoint reshards and resumes bit for bit", "[executor][mpi][moe][leakcheck]") {
  const std::string model = std::string(PARALLAX_SOURCE_DIR) + "/presets/models/moe-tiny.json";
  const std::string step = check_reshard("reshard_moe", 2, 2, 1, 1, 1, 2, "--zero 1", model);
  const auto stored = parallax::exec::read_stored_tensors(step);
  CHECK(stored.count("model.layers.3.mlp.gate.weight") == 1);
  CHECK(stored.at("model.layers.0.mlp.experts.7.up_proj.weight").shape == std::vector<int64_t>{64, 64});
  CHECK(stored.count("optimizer.m.model.layers.2.mlp.shared_experts.down_proj.weight") == 1);
  CHECK(stored.count("h.0.mlp.experts.7.c_fc.weight") == 0);
  check_reshard("reshard_moe_back", 1, 1, 2, 2, 1, 1, "--sp", model);

  const std::string dir = scratch_dir("resume_moe");
  const std::string plan = make_moe_plan(dir, "p", 2, 1, 1, "", model);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 6 --out " + dir + "/full.json", dir + "/f.log") == 0);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --checkpoint-dir " + dir + "/ck", dir + "/a.log") == 0);
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 3 --resume --checkpoint-dir " + dir + "/ck --out " + dir +
                        "/resumed.json",
                 dir + "/b.log") == 0);
  const auto full = losses(dir + "/full.json");
  const auto resumed = losses(dir + "/resumed.json");
  REQUIRE(resumed.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(resumed[i] == full[i + 3]);
}

// Expert parallelism: each ep rank writes its own experts (model_tp0_pp0_ep1 holds experts 4-7 of
// every layer, ep rank 0's file the dense tensors and experts 0-3); the checkpoint loads into
// tp=2 without ep, and a tp=2 checkpoint into dp=2 ep=2.
TEST_CASE("an expert-parallel checkpoint reshards to tp=2 and back", "[executor][mpi][moe]") {
  const std::string model = std::string(PARALLAX_SOURCE_DIR) + "/presets/models/moe-tiny.json";
  const std::string step = check_reshard("reshard_moe_ep", 1, 1, 2, 2, 1, 1, "--sp", model, 2, 1);
  CHECK(fs::exists(fs::path(step) / "model_tp0_pp0_ep0.safetensors"));
  CHECK(fs::exists(fs::path(step) / "model_tp0_pp0_ep1.safetensors"));
  const auto stored = parallax::exec::read_stored_tensors(step);
  for (int e = 0; e < 8; ++e) {
    INFO("expert " << e);
    CHECK(stored.count("model.layers.3.mlp.experts." + std::to_string(e) + ".down_proj.weight") == 1);
    CHECK(stored.count("optimizer.v.model.layers.0.mlp.experts." + std::to_string(e) + ".gate_proj.weight") == 1);
  }
  check_reshard("reshard_moe_ep_back", 2, 1, 1, 1, 1, 2, "", model, 1, 2);
  // checkpoint inspect names the plan's expert parallelism.
  const std::string log = scratch_dir("reshard_moe_ep_inspect") + "/inspect.log";
  REQUIRE(shell(std::string(PARALLAX_BIN) + " checkpoint inspect " + fs::path(step).parent_path().string() +
                " > " + log + " 2>&1") == 0);
  CHECK(slurp(log).find("plan   tp=1 pp=1 vpp=1 dp=2 ep=2 zero=0") != std::string::npos);
}

TEST_CASE("a corrupted checkpoint is refused and the previous one is used", "[executor][mpi]") {
  const std::string dir = scratch_dir("corrupt");
  const std::string plan = make_plan(dir, "p", 1, 1, 1, "");
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 4 --out " + dir + "/full.json", dir + "/f.log") == 0);
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 3 --checkpoint-every 1 --checkpoint-dir " + dir + "/ck",
                 dir + "/a.log") == 0);
  // Flip one byte in the data of the newest checkpoint.
  const fs::path f = fs::path(dir) / "ck" / "step_000003" / "model_tp0_pp0.safetensors";
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(fs::file_size(f) - 5));
    io.put('\x7f');
  }
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 1 --resume --checkpoint-dir " + dir +
                        "/ck --out " + dir + "/b.json",
                 dir + "/b.log") == 0);
  const std::string log = slurp(dir + "/b.log");
  CHECK(log.find("checksum mismatch") != std::string::npos);
  CHECK(log.find("step_000002") != std::string::npos);
  CHECK(losses(dir + "/b.json")[0] == losses(dir + "/full.json")[2]);
}

namespace {

// gpt-tiny with some fields changed, written as a model file, and its 1-rank plan.
std::string tiny_variant_plan(const std::string& dir, const std::string& name, const nlohmann::json& changes) {
  nlohmann::json m = {{"name", name},      {"source", "gpt-tiny variant (tests)"}, {"layers", 4},
                      {"hidden", 128},     {"heads", 4},                           {"ffn_hidden", 512},
                      {"seq_len", 64},     {"vocab", 512}};
  m.update(changes);
  const std::string model = dir + "/" + name + ".model.json";
  std::ofstream(model) << m.dump(1);
  const std::string plan = dir + "/" + name + ".plan.json";
  const std::string cmd = std::string(PARALLAX_BIN) + " predict --model " + model +
                          " --cluster dgx-a100-superpod --dtype fp32 --global-batch 4 --mbs 1 --gpus 1"
                          " --tp 1 --pp 1 --recompute none --out " + plan + " > /dev/null";
  if (shell(cmd) != 0) throw std::runtime_error("predict failed: " + cmd);
  return plan;
}

// Every file under dir, by path, with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = slurp(e.path().string());
  return out;
}

}  // namespace

// Issue 20: a 6-layer checkpoint used to resume silently into a 4-layer plan, a heads=2 one into a
// heads=4 model, and a run of another model wrote into the directory.
TEST_CASE("another model's checkpoints are refused before anything is written and stay byte-identical",
          "[executor][mpi][slow][release-only]") {
  const std::string dir = scratch_dir("identity");
  const std::string mine = tiny_variant_plan(dir, "gpt-tiny", nlohmann::json::object());
  REQUIRE(mpirun(1, "--plan " + mine + " --steps 2 --checkpoint-every 1 --checkpoint-dir " + dir + "/ck",
                 dir + "/a.log") == 0);
  const auto before = snapshot(dir + "/ck");
  REQUIRE(before.size() == 2 * 2);  // two steps, each a shard and COMPLETE
  // Every tensor keeps its shape in the first three (vocabulary 500 pads to the same 512 rows).
  for (const auto& [name, change] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"layers6", {{"layers", 6}}},
           {"heads2", {{"heads", 2}}},
           {"vocab500", {{"vocab", 500}}},
           {"wide", {{"hidden", 256}}}}) {
    INFO(name);
    const std::string other = tiny_variant_plan(dir, name, change);
    CHECK(mpirun(1, "--plan " + other + " --steps 1 --resume --checkpoint-dir " + dir + "/ck",
                 dir + "/" + name + ".log") == 2);
    const std::string log = slurp(dir + "/" + name + ".log");
    CHECK(log.find("parallax: error: " + dir + "/ck/step_000002: model: this checkpoint is of gpt-tiny (") == 0);
    CHECK(log.find("the plan's model is " + name + " (") != std::string::npos);
    // Without --resume the run would have written into the directory: refused the same way.
    CHECK(mpirun(1, "--plan " + other + " --steps 1 --checkpoint-dir " + dir + "/ck",
                 dir + "/" + name + ".w.log") == 2);
  }
  CHECK(snapshot(dir + "/ck") == before);
  // The same model under another name is the same model: its checkpoints resume.
  const std::string renamed = tiny_variant_plan(dir, "my-tiny", nlohmann::json::object());
  CHECK(mpirun(1, "--plan " + renamed + " --steps 1 --resume --checkpoint-dir " + dir + "/ck",
               dir + "/renamed.log") == 0);
  CHECK(slurp(dir + "/renamed.log").find("resumed from " + dir + "/ck/step_000002") != std::string::npos);
}

TEST_CASE("resuming needs a checkpoint there (exit 2 without one) unless --resume-if-present, which starts fresh",
          "[executor][mpi][slow]") {
  const std::string dir = scratch_dir("resume_flags");
  const std::string plan = make_plan(dir, "p", 1, 1, 1, "");
  CHECK(mpirun(1, "--plan " + plan + " --resume", dir + "/nodir.log") == 2);
  CHECK(slurp(dir + "/nodir.log").find("parallax: error: command line: --resume: needs --checkpoint-dir") == 0);
  CHECK(mpirun(1, "--plan " + plan + " --resume --checkpoint-dir " + dir + "/none", dir + "/none.log") == 2);
  CHECK_FALSE(fs::exists(dir + "/none"));
  fs::create_directories(dir + "/empty/step_000001");  // a step without COMPLETE is no checkpoint
  CHECK(mpirun(1, "--plan " + plan + " --resume --checkpoint-dir " + dir + "/empty", dir + "/empty.log") == 2);
  CHECK(slurp(dir + "/empty.log").find("holds no complete checkpoint") != std::string::npos);
  // A requeued job: fresh the first time, resumed the second.
  REQUIRE(mpirun(1, "--plan " + plan + " --resume-if-present --checkpoint-dir " + dir + "/job",
                 dir + "/job1.log") == 0);
  CHECK(slurp(dir + "/job1.log").find("starting from step 0") != std::string::npos);
  CHECK(fs::exists(dir + "/job/step_000001/COMPLETE"));
  REQUIRE(mpirun(1, "--plan " + plan + " --resume-if-present --checkpoint-dir " + dir + "/job",
                 dir + "/job2.log") == 0);
  CHECK(slurp(dir + "/job2.log").find("resumed from " + dir + "/job/step_000001") != std::string::npos);
  CHECK(fs::exists(dir + "/job/step_000002/COMPLETE"));
}

TEST_CASE("checkpoint inspect: every step's model, plan and shards, every checksum verified",
          "[executor][mpi]") {
  const std::string dir = scratch_dir("inspect");
  const std::string plan = make_plan(dir, "p", 2, 1, 1, "");
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 2 --checkpoint-every 1 --checkpoint-dir " + dir + "/ck",
                 dir + "/a.log") == 0);
  // Hugging Face's safetensors loaders accept only "format": "pt" (or tf, flax).
  const auto meta = parallax::exec::read_shard_metadata(dir + "/ck/step_000002/model_tp1_pp0.safetensors");
  CHECK(meta.at("format") == "pt");
  const std::string inspect = std::string(PARALLAX_BIN) + " checkpoint inspect " + dir + "/ck";
  REQUIRE(shell(inspect + " > " + dir + "/ok.txt 2>&1") == 0);
  const std::string ok = slurp(dir + "/ok.txt");
  CHECK(ok.find(dir + "/ck/step_000002  complete, step 2") != std::string::npos);
  CHECK(ok.find("model  gpt-tiny (layers 4, hidden 128, heads 4, vocab 512; fnv1a-64:") != std::string::npos);
  CHECK(ok.find("plan   tp=2 pp=1 vpp=1 dp=1 zero=0") != std::string::npos);
  CHECK(ok.find("format parallax checkpoint 1 (HF GPT-2 names and Conv1D (in, out) layout; wte padded)") !=
        std::string::npos);
  CHECK(ok.find("4 shard files verify") != std::string::npos);
  // One flipped byte in one shard: named, and exit 2.
  const fs::path f = fs::path(dir) / "ck" / "step_000001" / "model_tp1_pp0.safetensors";
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(fs::file_size(f) - 5));
    io.put('\x7f');
  }
  CHECK(shell(inspect + " > " + dir + "/bad.txt 2> " + dir + "/bad.err") == 2);
  CHECK(slurp(dir + "/bad.txt").find("model_tp1_pp0.safetensors") != std::string::npos);
  CHECK(slurp(dir + "/bad.err").find("parallax: error: " + dir + "/ck: checkpoint inspect: 1 of 4 shard files do not "
                                     "verify; the first: " + f.string() + ": __metadata__.checksum: checksum mismatch") == 0);
}

TEST_CASE("bad input: one line on rank 0 and exit 2 on every rank", "[executor][mpi][slow][leakcheck]") {
  const std::string dir = scratch_dir("errors");
  const std::string plan = make_plan(dir, "p", 2, 1, 1, "");
  SECTION("world size differs from tp*pp*dp") {
    CHECK(mpirun(3, "--plan " + plan, dir + "/ws.log") == 2);
    const std::string log = slurp(dir + "/ws.log");
    CHECK(log.find("parallax: error: " + plan + ": $.plan: the world size (3 MPI ranks) must equal tp*cp*pp*dp = 2") == 0);
    CHECK(log.find("parallax: error", 10) == std::string::npos);  // rank 0 only
  }
  SECTION("missing plan file") {
    CHECK(mpirun(2, "--plan " + dir + "/nope.json", dir + "/np.log") == 2);
  }
  SECTION("missing data file") {
    CHECK(mpirun(2, "--plan " + plan + " --data " + dir + "/nope.bin", dir + "/nd.log") == 2);
    CHECK(slurp(dir + "/nd.log").find("cannot open the token file") != std::string::npos);
  }
}

TEST_CASE("token files: raw uint16 and llm.c format give the same run", "[executor][mpi]") {
  const std::string dir = scratch_dir("tokens");
  const std::string plan = make_plan(dir, "p", 1, 1, 1, "");
  std::vector<uint16_t> toks(2000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<uint16_t>((i * 7 + i / 3) % 512);
  {
    std::ofstream raw(dir + "/raw.bin", std::ios::binary);
    raw.write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
    std::ofstream llmc(dir + "/llmc.bin", std::ios::binary);
    int32_t header[256] = {20240520, 1, static_cast<int32_t>(toks.size())};
    llmc.write(reinterpret_cast<const char*>(header), sizeof(header));
    llmc.write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  }
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 2 --data " + dir + "/raw.bin --out " + dir + "/a.json", dir + "/a.log") == 0);
  REQUIRE(mpirun(1, "--plan " + plan + " --steps 2 --data " + dir + "/llmc.bin --out " + dir + "/b.json", dir + "/b.log") == 0);
  CHECK(losses(dir + "/a.json") == losses(dir + "/b.json"));
}

TEST_CASE("measurements.json and the trace have the promised shape", "[executor][mpi]") {
  const std::string dir = scratch_dir("measure");
  const std::string plan = make_plan(dir, "p", 2, 1, 1, "");
  REQUIRE(mpirun(2, "--plan " + plan + " --steps 2 --out " + dir + "/m.json --trace " + dir + "/t.json",
                 dir + "/a.log") == 0);
  std::ifstream in(dir + "/m.json");
  const auto m = nlohmann::json::parse(in);
  CHECK(m.at("iterations").size() == 2);
  CHECK(m.at("iterations")[0].contains("time_s"));
  CHECK(m.at("gemm_path").get<std::string>().find("sgemm") != std::string::npos);
  CHECK(m.at("precision") == "fp32 throughout");
  REQUIRE(m.at("ranks").size() == 2);
  for (const auto& r : m.at("ranks")) {
    CHECK(r.at("peak_resident_bytes").get<double>() > 0);
    bool qkv = false, tp_coll = false;
    for (const auto& o : r.at("ops"))
      if (o.at("name") == "matmul_qkv") {
        qkv = true;
        CHECK(o.at("flops").get<double>() > 0);
        CHECK(o.at("shape") == "64x128x192");  // (b*s) x h x (3h/tp)
      }
    for (const auto& c : r.at("collectives"))
      if (c.at("group") == "tp" && c.at("bytes").get<double>() > 0) tp_coll = true;
    CHECK(qkv);
    CHECK(tp_coll);
  }
  std::ifstream tin(dir + "/t.json");
  const auto t = nlohmann::json::parse(tin);
  // The simulator's shape: pid per rank, tid per stream (0 compute, 1 tp comm, ...), one
  // "F <mb>" / "B <mb>" span per schedule step with its micro-batch and chunk.
  std::set<int> pids;
  std::set<std::string> steps, threads;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads.insert(std::to_string(e.at("tid").get<int>()) + " " + e.at("args").at("name").get<std::string>());
    if (e.at("ph") != "X") continue;
    pids.insert(e.at("pid").get<int>());
    CHECK(e.contains("tid"));
    CHECK(e.contains("dur"));
    if (e.contains("args") && e.at("args").contains("micro_batch")) {
      steps.insert(e.at("name").get<std::string>());
      CHECK(e.at("tid") == 0);
    }
  }
  CHECK(pids == std::set<int>{0, 1});
  CHECK(threads.count("0 compute") == 1);
  CHECK(threads.count("1 tp comm") == 1);
  // global batch 4, dp 1, mbs 1: micro-batches 0-3
  CHECK(steps == std::set<std::string>{"F 0", "F 1", "F 2", "F 3", "B 0", "B 1", "B 2", "B 3"});
}

TEST_CASE("launch builds and prints the mpirun command of a plan", "[executor]") {
  const std::string dir = scratch_dir("launch");
  const std::string plan = make_plan(dir, "p", 2, 1, 2, "");
  REQUIRE(shell(std::string(PARALLAX_BIN) + " launch --dry-run --plan " + plan +
                " --hostfile hosts -- --steps 3 > " + dir + "/out.txt") == 0);
  const std::string out = slurp(dir + "/out.txt");
  CHECK(out.rfind("mpirun -np 4 --hostfile hosts", 0) == 0);
  CHECK(out.find(" run --plan " + plan + " --steps 3\n") != std::string::npos);
}

// Nothing all-reduces the replicated tensors' gradients over TP without sequence parallelism
// (replica_check.hpp): they stay replicas only because every kernel writing them is
// deterministic. Ten steps, then every replicated tensor's bits are compared across TP ranks.
TEST_CASE("TP replicas hold the same bits after 10 steps, with and without sequence parallelism",
          "[executor][mpi]") {
  const std::string dir = scratch_dir("replicas");
  for (const std::string flags : {"", "--sp"}) {
    INFO("flags: " << flags);
    const std::string name = flags.empty() ? "tp" : "sp";
    const std::string plan = make_plan(dir, name, 2, 1, 1, flags);
    const std::string out = dir + "/" + name + ".json";
    REQUIRE(mpirun(2, "--plan " + plan + " --steps 10 --out " + out, dir + "/" + name + ".log") == 0);
    std::ifstream in(out);
    const auto m = nlohmann::json::parse(in);
    CHECK(m.at("tp_replicas") == "identical");
    REQUIRE(m.at("ranks").size() == 2);
    for (const auto& r : m.at("ranks")) CHECK(r.at("tp_replicas_diverged").empty());
  }
}
