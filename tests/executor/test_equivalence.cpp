// Every plan computes the same training as the single process: the loss, the logits and every
// gradient tensor of the first step (reassembled from the ranks' shards by name) and the losses of five
// steps equal the (1,1,1) run within 1e-5 relative. Runs the real binary under mpirun.
#include <catch2/catch.hpp>

#include <cmath>

#include "mpi_run.hpp"

using namespace parallax::test;

namespace {

struct Run {
  std::vector<double> losses;
  std::map<std::string, parallax::exec::GlobalTensor> grads;
};

Run run_plan(const std::string& dir, const std::string& name, int tp, int pp, int dp,
             const std::string& flags, const std::string& model = "gpt-tiny", int cp = 1) {
  const std::string plan = make_plan(dir, name, tp, pp, dp, flags, model, cp);
  const std::string out = dir + "/" + name;
  const int rc = mpirun(tp * cp * pp * dp,
                        "--plan " + plan + " --steps 5 --out " + out + ".m.json --dump-grads " +
                            out + ".grads",
                        out + ".log");
  INFO(slurp(out + ".log"));
  REQUIRE(rc == 0);
  return {losses(out + ".m.json"), parallax::exec::read_global_tensors(out + ".grads")};
}

// Relative to the tensor's largest reference magnitude (elements near zero have no meaningful
// elementwise relative error).
void require_same(const Run& ref, const Run& got) {
  REQUIRE(got.losses.size() == ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(std::abs(got.losses[i] - ref.losses[i]) <= 1e-5 * std::abs(ref.losses[i]));
  }
  REQUIRE(got.grads.size() == ref.grads.size());
  for (const auto& [name, r] : ref.grads) {
    INFO("gradient " << name);
    REQUIRE(got.grads.count(name) == 1);
    const auto& g = got.grads.at(name);
    // Logits: DP rank 0 writes its own micro-batches, the first rows of the reference's.
    const bool logits = name == "logits";
    if (logits)
      REQUIRE((g.shape[1] == r.shape[1] && g.shape[0] <= r.shape[0]));
    else
      REQUIRE(g.shape == r.shape);
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < g.data.size(); ++i) {
      max_ref = std::max(max_ref, static_cast<double>(std::abs(r.data[i])));
      max_err = std::max(max_err, static_cast<double>(std::abs(g.data[i] - r.data[i])));
    }
    INFO("max abs difference " << max_err << ", max |reference| " << max_ref);
    CHECK(max_err <= 1e-5 * max_ref);
  }
}

const Run& reference() {
  static const Run ref = run_plan(scratch_dir("ref"), "ref", 1, 1, 1, "");
  return ref;
}

// gpt-tiny with untied output embeddings (lm_head.weight) and vocab 500 (padded rows).
std::string untied_model() {
  return std::string(PARALLAX_SOURCE_DIR) + "/tests/executor/data/gpt-tiny-untied.json";
}

}  // namespace

TEST_CASE("single process: recompute full and selective change nothing", "[executor][mpi]") {
  const std::string dir = scratch_dir("recompute");
  require_same(reference(), run_plan(dir, "full", 1, 1, 1, "--recompute full"));
  require_same(reference(), run_plan(dir, "selective", 1, 1, 1, "--recompute selective"));
}

TEST_CASE("tp=2 equals the single process", "[executor][mpi][release-only]") {
  const std::string dir = scratch_dir("tp2");
  require_same(reference(), run_plan(dir, "tp2", 2, 1, 1, ""));
  require_same(reference(), run_plan(dir, "tp2_full", 2, 1, 1, "--recompute full"));
}

TEST_CASE("sequence parallelism equals the single process", "[executor][mpi][slow]") {
  const std::string dir = scratch_dir("sp");
  require_same(reference(), run_plan(dir, "tp2_sp", 2, 1, 1, "--sp"));
  require_same(reference(), run_plan(dir, "t2p2_sp_full", 2, 2, 1, "--sp --recompute full"));
  require_same(reference(), run_plan(dir, "t2d2_sp_sel_zero1", 2, 1, 2,
                                     "--sp --recompute selective --zero 1"));
}

TEST_CASE("dp=2 equals the single process, with and without ZeRO-1", "[executor][mpi][release-only]") {
  const std::string dir = scratch_dir("dp2");
  require_same(reference(), run_plan(dir, "dp2", 1, 1, 2, ""));
  require_same(reference(), run_plan(dir, "dp2_zero1", 1, 1, 2, "--zero 1"));
}

TEST_CASE("pp=2 equals the single process under GPipe and 1F1B", "[executor][mpi][slow]") {
  const std::string dir = scratch_dir("pp2");
  require_same(reference(), run_plan(dir, "pp2_gpipe", 1, 2, 1, "--schedule gpipe"));
  require_same(reference(), run_plan(dir, "pp2_gpipe_full", 1, 2, 1, "--schedule gpipe --recompute full"));
  require_same(reference(),
               run_plan(dir, "pp2_1f1b_sel", 1, 2, 1, "--schedule 1f1b --recompute selective"));
}

TEST_CASE("tp=2 pp=2 dp=2 equals the single process", "[executor][mpi]") {
  const std::string dir = scratch_dir("tp2pp2dp2");
  require_same(reference(), run_plan(dir, "t2p2d2", 2, 2, 2, "--zero 1 --recompute full"));
}

TEST_CASE("tp=2 pp=2 interleaved vpp=2 equals the single process", "[executor][mpi][leakcheck]") {
  const std::string dir = scratch_dir("interleaved");
  require_same(reference(), run_plan(dir, "t2p2v2", 2, 2, 1, "--schedule interleaved --vpp 2"));
  require_same(reference(), run_plan(dir, "p2v2d2", 1, 2, 2,
                                     "--schedule interleaved --vpp 2 --zero 1 --recompute full"));
}

TEST_CASE("interleaved micro-batch groups equal the single process", "[executor][mpi]") {
  // Megatron-Core's groups (--microbatch-group-size-per-virtual-pipeline-stage): 5 micro-batches
  // on pp 2 run as groups of 3 and 2, which the default groups of pp cannot (5 % 2 != 0).
  const std::string dir = scratch_dir("microbatch_groups");
  const Run ref = run_plan(dir, "ref5", 1, 1, 1, "--global-batch 5");
  require_same(ref, run_plan(dir, "p2v2g3", 1, 2, 1, "--global-batch 5 --vpp 2 --microbatch-group 3"));
  // Groups of 4 over 4 micro-batches: every micro-batch through chunk 0 before chunk 1.
  require_same(reference(), run_plan(dir, "t2p2v2g4", 2, 2, 1, "--vpp 2 --microbatch-group 4"));
}

TEST_CASE("untied output embeddings: pp=2 and tp=2 pp=2 dp=2 equal the single process", "[executor][mpi]") {
  // Before the embedding group was tied-only, pp > 1 deadlocked here: the first stage summed
  // wte's gradient with a last stage that holds lm_head instead.
  const std::string dir = scratch_dir("untied");
  const Run ref = run_plan(dir, "ref", 1, 1, 1, "", untied_model());
  REQUIRE(ref.grads.count("lm_head.weight") == 1);
  require_same(ref, run_plan(dir, "pp2", 1, 2, 1, "", untied_model()));
  require_same(ref, run_plan(dir, "t2p2d2", 2, 2, 2, "--zero 1", untied_model()));
}

// llama-tiny: RoPE, grouped-query attention (4 query heads over 2 key/value heads; at tp 2 each
// rank holds one KV head and its two query heads), SwiGLU, RMSNorm, untied embeddings, no biases.
namespace {
const Run& llama_reference() {
  static const Run ref = run_plan(scratch_dir("llama_ref"), "ref", 1, 1, 1, "", "llama-tiny");
  return ref;
}
}  // namespace

TEST_CASE("llama-tiny: recompute and tp=2 (with and without SP) equal the single process",
          "[executor][mpi][llama]") {
  const Run& ref = llama_reference();
  REQUIRE(ref.grads.count("lm_head.weight") == 1);
  REQUIRE(ref.grads.count("h.0.attn.c_attn.bias") == 0);  // no linear biases
  // The fused QKV holds q (4 heads) | k (2) | v (2) of head_dim 16 over hidden 64.
  REQUIRE(ref.grads.at("h.0.attn.c_attn.weight").shape == std::vector<int64_t>{128, 64});
  const std::string dir = scratch_dir("llama_tp");
  require_same(ref, run_plan(dir, "full", 1, 1, 1, "--recompute full", "llama-tiny"));
  require_same(ref, run_plan(dir, "selective", 1, 1, 1, "--recompute selective", "llama-tiny"));
  require_same(ref, run_plan(dir, "tp2", 2, 1, 1, "", "llama-tiny"));
  require_same(ref, run_plan(dir, "tp2_sp_sel", 2, 1, 1, "--sp --recompute selective", "llama-tiny"));
  require_same(ref, run_plan(dir, "tp2_sp_full", 2, 1, 1, "--sp --recompute full", "llama-tiny"));
}

TEST_CASE("llama-tiny: pp=2, dp=2 (ZeRO 0 and 1) and tp=2 pp=2 equal the single process",
          "[executor][mpi][llama][leakcheck]") {
  const Run& ref = llama_reference();
  const std::string dir = scratch_dir("llama_pp_dp");
  require_same(ref, run_plan(dir, "pp2", 1, 2, 1, "", "llama-tiny"));
  require_same(ref, run_plan(dir, "pp2_full", 1, 2, 1, "--recompute full", "llama-tiny"));
  require_same(ref, run_plan(dir, "dp2", 1, 1, 2, "", "llama-tiny"));
  require_same(ref, run_plan(dir, "dp2_zero1_sel", 1, 1, 2, "--zero 1 --recompute selective", "llama-tiny"));
  require_same(ref, run_plan(dir, "t2p2_sp_zero1", 2, 2, 1, "--sp --zero 1", "llama-tiny"));
  require_same(ref, run_plan(dir, "t2p2d2_full", 2, 2, 2, "--zero 1 --recompute full", "llama-tiny"));
}

TEST_CASE("fused attention (the blocked kernel) equals the unfused single process",
          "[executor][mpi][llama][leakcheck]") {
  // The blocked online-softmax kernel keeps only each row's log-sum-exp; the training it computes
  // is the unfused kernel's within rounding.
  const std::string dir = scratch_dir("fused_attention");
  require_same(reference(), run_plan(dir, "gpt_fused", 1, 1, 1, "--attention fused"));
  require_same(reference(), run_plan(dir, "gpt_t2p2_fused_sel", 2, 2, 1,
                                     "--attention fused --sp --recompute selective"));
  require_same(llama_reference(), run_plan(dir, "llama_fused", 1, 1, 1, "--attention fused", "llama-tiny"));
  require_same(llama_reference(), run_plan(dir, "llama_t2d2_fused_full", 2, 1, 2,
                                           "--attention fused --zero 1 --recompute full", "llama-tiny"));
}

// Context parallelism (cp 2: each rank holds chunks i and 3 - i of the sequence's four, gathers
// every rank's keys and values and sums their gradients back) runs with the fused kernel only; the
// references are the unfused single processes, which the fused kernel equals (above).
namespace {
struct CpLayout {
  const char* name;
  int tp, pp, dp;
  const char* flags;  // beside --attention fused
};
void require_cp2_same(const Run& ref, const std::string& dir, const std::string& model,
                      std::initializer_list<CpLayout> layouts) {
  for (const CpLayout& l : layouts) {
    INFO("layout " << l.name);
    require_same(ref, run_plan(dir, l.name, l.tp, l.pp, l.dp, std::string("--attention fused ") + l.flags,
                               model, 2));
  }
}
}  // namespace

TEST_CASE("context parallelism cp=2 (with dp, ZeRO-1 and recompute) equals the single process",
          "[executor][mpi][llama]") {
  const std::string dir = scratch_dir("cp2");
  require_cp2_same(llama_reference(), dir, "llama-tiny",
                   {{"c2", 1, 1, 1, ""},
                    {"c2_sel_zero1", 1, 1, 1, "--recompute selective --zero 1"},
                    {"c2_full", 1, 1, 1, "--recompute full"},
                    {"c2d2_zero1", 1, 1, 2, "--zero 1"}});
  // Learned positions: each rank adds the rows of its two chunks' positions.
  require_cp2_same(reference(), dir, "gpt-tiny", {{"gpt_c2", 1, 1, 1, ""}});
}

// Heads 24 wide on hidden 64 (Hugging Face head_dim, Megatron-LM --kv-channels): tp splits the
// 96-wide queries and the output projection's 96 input columns; cp gathers 24-wide keys.
TEST_CASE("llama with decoupled head_dim: tp=2 with SP, pp=2 dp=2 ZeRO-1 and cp=2 equal the single process",
          "[executor][mpi][llama]") {
  const std::string model = std::string(PARALLAX_SOURCE_DIR) + "/tests/reference/llama_head_dim_model.json";
  const std::string dir = scratch_dir("llama_head_dim");
  const Run ref = run_plan(dir, "ref", 1, 1, 1, "", model);
  require_same(ref, run_plan(dir, "tp2_sp_sel", 2, 1, 1, "--sp --recompute selective", model));
  require_same(ref, run_plan(dir, "p2d2_zero1_full", 1, 2, 2, "--zero 1 --recompute full", model));
  require_cp2_same(ref, dir, model, {{"c2", 1, 1, 1, ""}});
}

TEST_CASE("tp=2 cp=2 pp=2 (with and without SP) equals the single process",
          "[executor][mpi][llama][slow][leakcheck]") {
  require_cp2_same(llama_reference(), scratch_dir("t2c2p2"), "llama-tiny",
                   {{"t2c2p2", 2, 2, 1, ""},
                    {"t2c2p2_sp_sel", 2, 2, 1, "--sp --recompute selective"},
                    {"t2c2p2_sp_full_zero1", 2, 2, 1, "--sp --recompute full --zero 1"}});
}

// Mixtures of experts (moe-tiny: 8 SwiGLU experts, top-2 softmax routing, one shared expert, the
// load-balancing loss; every layer MoE): tensor parallelism shards each expert's MLP (and the
// shared experts') as the dense MLP, the router replicated; pipeline and data parallelism hold
// every expert. The single process equals the PyTorch reference (tests/reference).
namespace {
std::string moe_tiny() { return std::string(PARALLAX_SOURCE_DIR) + "/presets/models/moe-tiny.json"; }

Run run_moe_plan(const std::string& dir, const std::string& name, int tp, int pp, int dp, const std::string& flags,
                 int cp = 1, int ep = 1) {
  const std::string plan = make_moe_plan(dir, name, tp, pp, dp, flags, moe_tiny(), cp, ep);
  const std::string out = dir + "/" + name;
  const int rc = mpirun(tp * cp * pp * dp,
                        "--plan " + plan + " --steps 5 --out " + out + ".m.json --dump-grads " + out + ".grads",
                        out + ".log");
  INFO(slurp(out + ".log"));
  REQUIRE(rc == 0);
  return {losses(out + ".m.json"), parallax::exec::read_global_tensors(out + ".grads")};
}

const Run& moe_reference() {
  static const Run ref = run_moe_plan(scratch_dir("moe_ref"), "ref", 1, 1, 1, "");
  return ref;
}

struct MoeLayout {
  const char* name;
  int tp, pp, dp, cp;
  const char* flags;
  int ep = 1;
};
void require_moe_same(const std::string& dir, std::initializer_list<MoeLayout> layouts) {
  const Run& ref = moe_reference();
  REQUIRE(ref.grads.count("h.0.mlp.experts.7.c_fc.weight") == 1);
  REQUIRE(ref.grads.count("h.3.mlp.router.weight") == 1);
  for (const MoeLayout& l : layouts) {
    INFO("layout " << l.name);
    require_same(ref, run_moe_plan(dir, l.name, l.tp, l.pp, l.dp, l.flags, l.cp, l.ep));
  }
}
}  // namespace

TEST_CASE("moe-tiny: recompute, tp=2 (sequence parallel) and dp=2 equal the single process",
          "[executor][mpi][moe]") {
  require_moe_same(scratch_dir("moe_tp_dp"), {{"full", 1, 1, 1, 1, "--recompute full"},
                                              {"selective", 1, 1, 1, 1, "--recompute selective"},
                                              {"tp2_sp", 2, 1, 1, 1, "--sp"},
                                              {"tp2_sp_full", 2, 1, 1, 1, "--sp --recompute full"},
                                              {"dp2", 1, 1, 2, 1, ""},
                                              {"dp2_zero1", 1, 1, 2, 1, "--zero 1"}});
}

TEST_CASE("moe-tiny: pp=2, tp=2 pp=2 dp=2 and cp=2 equal the single process", "[executor][mpi][moe][slow][release-only]") {
  require_moe_same(scratch_dir("moe_pp_cp"),
                   {{"pp2_1f1b", 1, 2, 1, 1, "--schedule 1f1b"},
                    {"pp2_gpipe_full", 1, 2, 1, 1, "--schedule gpipe --recompute full"},
                    {"t2p2d2_sp_zero1", 2, 2, 2, 1, "--sp --zero 1"},
                    {"t2p2v2", 2, 2, 1, 1, "--schedule interleaved --vpp 2"},
                    {"c2", 1, 1, 1, 2, "--attention fused"},
                    {"t2c2_sp", 2, 1, 1, 2, "--attention fused --sp"}});
}

// Expert parallelism: ep 2 over the dp (or cp) ranks, each holding 4 of the 8 experts, tokens
// exchanged by all-to-all-v; the experts' gradients reduce over the edp ranks (one here: none).
TEST_CASE("moe-tiny: ep=2 with dp=2, tp=2 and recompute equals the single process", "[executor][mpi][moe]") {
  const std::string dir = scratch_dir("moe_ep");
  require_moe_same(dir, {{"d2e2", 1, 1, 2, 1, "", 2},
                         {"d2e2_full", 1, 1, 2, 1, "--recompute full", 2},
                         {"t2d2e2_sp_sel", 2, 1, 2, 1, "--sp --recompute selective", 2}});
  // parallax compare sets the measured all-to-alls beside the model's (ep_forward_s and
  // ep_backward_s of the plan's stages): both present.
  const std::string out = dir + "/compare.json";
  REQUIRE(shell(std::string(PARALLAX_BIN) + " compare --measurements " + dir + "/d2e2.m.json --json --out " +
                out + " > /dev/null") == 0);
  const auto cmp = nlohmann::json::parse(std::ifstream(out));
  CHECK(cmp.at("runs")[0].at("plan").get<std::string>().find(" ep2") != std::string::npos);
  bool ep_row = false;
  for (const auto& r : cmp.at("runs")[0].at("rows"))
    if (r.at("kind") == "collective" && r.at("name") == "ep") {
      ep_row = true;
      CHECK(r.at("predicted_s").get<double>() > 0);
      CHECK(r.at("measured_s").get<double>() > 0);
    }
  CHECK(ep_row);
}

TEST_CASE("moe-tiny: ep=2 with pp=2, cp=2, tp=2 pp=2 dp=2 and edp=2 equals the single process",
          "[executor][mpi][moe][slow][leakcheck]") {
  require_moe_same(scratch_dir("moe_ep_pp"), {{"p2d2e2_1f1b", 1, 2, 2, 1, "--schedule 1f1b", 2},
                                              {"c2e2", 1, 1, 1, 2, "--attention fused", 2},
                                              {"d4e2", 1, 1, 4, 1, "", 2},
                                              {"t2p2d2e2_sp_full", 2, 2, 2, 1, "--sp --recompute full", 2}});
}
