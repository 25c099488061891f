// The validation corpus reader (costmodel/corpus.hpp): what it predicts, what it lists as
// unsupported and why, how it converts each metric to an iteration time, and what it refuses.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "parallax/core/error.hpp"
#include "parallax/costmodel/conventions.hpp"
#include "parallax/costmodel/predict.hpp"
#include "parallax/validation/corpus.hpp"
#include "parallax/validation/validation.hpp"

using namespace parallax;

namespace {

nlohmann::json good_file() {
  return nlohmann::json::parse(R"({
    "corpus_version": 2,
    "source": {"id": "s", "title": "T", "kind": "paper", "where": "arXiv 1", "version": "v1",
               "url": "https://arxiv.org/abs/1", "independent_of": "test"},
    "stack": {"name": "megatron-lm", "version": "unpublished"},
    "conventions": {"tps": "tokens per second per GPU", "hw": "Narayanan Eq. 3"},
    "formulas": {"hw": {"flops_per_iteration": "megatron_hw"}},
    "runs": [{"id": "s-1", "where": "Table 1", "gpu": "a100-80gb", "cluster": "dgx-a100-superpod",
              "interconnect": "x", "gpus": 8, "dtype": "bf16", "global_batch": 64,
              "model": {"name": "m", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4,
                        "ffn_hidden": 1024, "seq_len": 128, "vocab": 1000, "activation": "gelu",
                        "position": "learned", "norm": "layernorm", "tied_embeddings": true},
              "plan": {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "vpp": "unpublished",
                       "micro_batch": "unpublished", "sequence_parallel": "unpublished",
                       "recompute": "full", "zero": 0, "fsdp": "none", "schedule": "unpublished"},
              "measured": {"value": 1000, "metric": "tokens_per_s_per_gpu", "convention": "tps"},
              "notes": ""}]})");
}

// Writes doc as <dir>/s.json and reads the directory.
Corpus read_doc(const nlohmann::json& doc) {
  // One directory per process: ctest runs this binary's cases in parallel.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("parallax_test_corpus_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.json") << doc.dump(1);
  return read_corpus({dir.string()});
}

}  // namespace

TEST_CASE("corpus: a row is resolved with its unpublished plan fields marked free") {
  const Corpus c = read_doc(good_file());
  REQUIRE(c.runs.size() == 1);
  const PublishedRun& r = c.runs[0];
  CHECK(r.free_micro_batch);
  CHECK(r.free_sequence_parallel);
  CHECK(r.free_vpp);
  CHECK_FALSE(r.free_recompute);
  CHECK(r.plan.recompute == Recompute::full);
  CHECK(r.job.framework == "megatron-lm");
  CHECK(r.group == "s");
  // tokens/s/GPU -> time: B s / (value x GPUs) = 64 x 128 / (1000 x 8) s.
  CHECK(r.measured_iteration_time_s == Approx(64.0 * 128 / (1000.0 * 8)));
}

TEST_CASE("corpus: TFLOP/s go through the convention's formula, MFU needs its peak") {
  nlohmann::json d = good_file();
  d["runs"][0]["measured"] = {{"value", 100}, {"metric", "tflops_per_gpu"}, {"convention", "hw"}};
  const Corpus c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  const ModelSpec& m = c.runs[0].model;
  // megatron_hw is Narayanan et al. 2021 Eq. 3, which conventions.hpp states independently.
  CHECK(formula_flops_per_iteration("megatron_hw", m, 64, "t") == Approx(megatron_flops_closed_form(m, 64)));
  CHECK(c.runs[0].measured_iteration_time_s == Approx(megatron_flops_closed_form(m, 64) / (8 * 100e12)));
  // 6N + 12 L h s per token; without the embedding the difference is 6 V h per token.
  const double with = formula_flops_per_iteration("6n_attn", m, 64, "t");
  const double without = formula_flops_per_iteration("6n_attn_noembed", m, 64, "t");
  CHECK(with - without == Approx(64.0 * 128 * 6 * 1000 * 256));
  d["runs"][0]["measured"] = {{"value", 0.4}, {"metric", "mfu"}, {"convention", "hw"}};
  const Corpus no_peak = read_doc(d);
  REQUIRE(no_peak.unsupported.size() == 1);
  CHECK(no_peak.unsupported[0].reason.find("no formula") != std::string::npos);
}

TEST_CASE("corpus: rows the model cannot express are listed with every reason") {
  nlohmann::json d = good_file();
  auto& row = d["runs"][0];
  row["plan"]["cp"] = 2;
  row["plan"]["dp"] = 1;
  row["gpu"] = "unpublished: B200";
  row["unsupported"] = "gpu b200; context parallelism";
  const Corpus c = read_doc(d);
  REQUIRE(c.runs.empty());
  REQUIRE(c.unsupported.size() == 1);
  CHECK(c.unsupported[0].reason == "gpu b200; context parallelism");  // each reason once
  d = good_file();
  d["runs"][0]["global_batch"] = "unpublished";
  CHECK(read_doc(d).unsupported.at(0).reason.find("global batch unpublished") != std::string::npos);
  d = good_file();
  d["runs"][0]["dtype"] = "fp8";
  CHECK(read_doc(d).unsupported.at(0).reason.find("fp8 on a100-80gb") != std::string::npos);
}

TEST_CASE("corpus: a cluster left unpublished is the GPU's preset, grown to the row's GPUs") {
  nlohmann::json d = good_file();
  d["runs"][0]["gpu"] = "h100-sxm";
  d["runs"][0]["cluster"] = "unpublished: somebody's";
  d["runs"][0]["gpus"] = 4096;
  d["runs"][0]["plan"]["dp"] = 1024;
  d["runs"][0]["global_batch"] = 1024;
  const Corpus c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  CHECK(c.runs[0].cluster.gpu.name == "h100-sxm");
  CHECK(c.runs[0].cluster.total_gpus() >= 4096);
}

TEST_CASE("corpus: schema breaks are bad input naming the field") {
  auto refused = [](nlohmann::json d, const std::string& path_part) {
    try {
      read_doc(d);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(e.path().find(path_part) != std::string::npos);
      return;
    }
    FAIL("accepted");
  };
  nlohmann::json d = good_file();
  d["stack"]["name"] = "jax";
  refused(d, "name");
  d = good_file();
  d["runs"][0]["dtype"] = "fp4";
  refused(d, "dtype");
  d = good_file();
  d["runs"][0]["measured"]["convention"] = "nope";
  refused(d, "convention");
  d = good_file();
  d["runs"][0].erase("where");
  refused(d, "where");
  d = good_file();
  d["runs"].push_back(d["runs"][0]);
  refused(d, "id");
  d = good_file();
  d["runs"][0]["plan"]["tp"] = 0;
  refused(d, "tp");
}

TEST_CASE("corpus: a published peak memory rides beside the throughput, in bytes, and is compared") {
  nlohmann::json d = good_file();
  d["runs"][0]["measured"] = nlohmann::json::array(
      {{{"value", 1000}, {"metric", "tokens_per_s_per_gpu"}, {"convention", "tps"}},
       {{"value", 30.5}, {"metric", "peak_memory_gib"}, {"convention", "tps"}}});
  d["runs"][0]["plan"]["micro_batch"] = 2;
  const Corpus c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  const PublishedRun& r = c.runs[0];
  // The throughput stays the compared metric; the memory is 30.5 x 2^30 bytes.
  CHECK(r.measured.metric == "tokens_per_s_per_gpu");
  CHECK(r.measured_iteration_time_s == Approx(64.0 * 128 / (1000.0 * 8)));
  CHECK(r.measured_peak_memory_bytes == 30.5 * 1073741824.0);
  // validate carries it beside predict()'s peak for the same plan.
  const ValidationReport rep = validate_corpus(c, std::nullopt);
  REQUIRE(rep.rows.size() == 1);
  const ValidationRow& v = rep.rows[0];
  CHECK(v.measured_peak_memory_bytes == r.measured_peak_memory_bytes);
  TopologyCache topos;
  const Prediction pr = predict(v.model, topos.get(v.cluster), v.job, v.plan, v.profile);
  CHECK(v.predicted_peak_memory_bytes == pr.peak_bytes);
  const ErrorSummary m = summarize_memory(rep.rows);
  CHECK(m.rows == 1);
  CHECK(m.mean_abs_error_pct == Approx(std::fabs(pr.peak_bytes / (30.5 * 1073741824.0) - 1) * 100));
}

TEST_CASE("corpus: TorchTitan's FSDP with pp is predicted, its micro-batches default to pp") {
  nlohmann::json d = good_file();
  auto& row = d["runs"][0];
  row["plan"]["zero"] = 3;
  row["plan"]["fsdp"] = "full_shard";
  // Megatron-LM shards only optimizer state with pp: the row cannot run on that stack.
  Corpus c = read_doc(d);
  REQUIRE(c.unsupported.size() == 1);
  CHECK(c.unsupported[0].reason.find("ZeRO-2/3 not supported with pp > 1") != std::string::npos);
  d["stack"]["name"] = "torchtitan";
  row["model"]["position"] = "rope";  // TorchTitan's models are Llama-shaped
  c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  const PublishedRun& r = c.runs[0];
  // TorchTitan splits the local batch (64 / dp 2 = 32) into pp (2) micro-batches of 16.
  CHECK_FALSE(r.free_micro_batch);
  CHECK(r.plan.micro_batch == 16);
  CHECK(r.plan.num_micro_batches == 2);
  CHECK_FALSE(valid_candidates(r).empty());
}

TEST_CASE("corpus: an interleaved row without vpp fills only vpp > 1, or says why it cannot") {
  nlohmann::json d = good_file();
  auto& row = d["runs"][0];
  row["plan"]["schedule"] = "Interleaved 1F1B";
  row["plan"]["micro_batch"] = 1;  // 64 / dp 2 = 32 micro-batches, a multiple of pp 2
  Corpus c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  // 4 layers on pp 2: 2 per stage, so vpp 2 is the only interleaved split.
  for (const PlanSpec& p : plan_candidates(c.runs[0])) {
    CHECK(p.vpp == 2);
    CHECK(p.schedule == Schedule::interleaved);
  }
  row["model"]["layers"] = 6;  // 3 per stage on pp 2: interleaving needs v | 3, v = 3 works
  c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  for (const PlanSpec& p : plan_candidates(c.runs[0])) CHECK(p.vpp == 3);
  row["plan"]["micro_batch"] = 32;  // one micro-batch per pipeline: no interleaving runs it
  c = read_doc(d);
  REQUIRE(c.unsupported.size() == 1);
  CHECK(c.unsupported[0].reason.find("no vpp > 1 passes the plan rules") != std::string::npos);
  row["plan"]["micro_batch"] = 1;
  row["plan"]["pp"] = 4;
  row["plan"]["dp"] = 1;
  row["plan"]["tp"] = 2;
  row["model"]["layers"] = 6;  // 6 layers on pp 4: unequal stages, no equal virtual stages
  c = read_doc(d);
  REQUIRE(c.runs.empty());
  REQUIRE(c.unsupported.size() == 1);
  CHECK(c.unsupported[0].reason.find("interleaved schedule with layers (6) over pp 4") !=
        std::string::npos);
  // TorchTitan cuts pp x 2 virtual stages that may differ by a layer: 10 layers on pp 4 run as
  // 2 + 3 + 3 + 2 layers per rank, two chunks each.
  d["stack"]["name"] = "torchtitan";
  row["model"]["position"] = "rope";
  row["model"]["layers"] = 10;
  c = read_doc(d);
  REQUIRE(c.runs.size() == 1);
  CHECK(c.runs[0].plan.vpp == 2);
  CHECK(c.runs[0].plan.first_stage_layers == 2);
  CHECK(c.runs[0].plan.last_stage_layers == 2);
  CHECK_FALSE(valid_candidates(c.runs[0]).empty());
}
