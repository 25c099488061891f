// Exports: Megatron-LM arguments parse back to the same plan, DeepSpeed's batch identity holds,
// scripts pass `bash -n`, and what a trainer cannot run is refused with a reason.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "parallax/core/error.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/export/deepspeed.hpp"
#include "parallax/export/launchers.hpp"
#include "parallax/export/megatron.hpp"
#include "parallax/export/megatron_deepspeed.hpp"
#include "parallax/inputs/megatron_import.hpp"
#include "parallax/topologies/cluster_size.hpp"
#include "spec_builders.hpp"

using namespace parallax;

namespace {

PlanFile plan_file(const std::string& model, int64_t gpus, int64_t batch, PlanSpec p) {
  PlanFile f;
  f.model = load_model(model);
  f.cluster = load_cluster("dgx-a100-superpod");
  f.gpus = gpus;
  f.job.global_batch = batch;
  p.dp = gpus / (p.tp * p.cp * p.pp);
  p.num_micro_batches = batch / (p.micro_batch * p.dp);
  f.plan = p;
  return f;
}

std::vector<PlanFile> three_plans() {
  using test::PlanBuilder;
  const PlanSpec a = PlanBuilder(8, 35).recompute(Recompute::full);  // MT-NLG as published
  // interleaved, SP, selective, distributed optimizer
  const PlanSpec b = PlanBuilder(4, 8).interleaved(3).batches(2, 1).sequence_parallel().recompute(
      Recompute::selective).zero(1);
  // GQA + SwiGLU + RMSNorm + RoPE, block recompute
  const PlanSpec c = PlanBuilder(8, 4).recompute(Recompute::full, 5);
  PlanFile fc = plan_file("llama2-70b", 512, 1024, c);
  fc.job.tokens = 2e12;
  // uneven pipeline: 96 layers over pp 7 as 3 + 5 x 18 + 3
  const PlanSpec d = PlanBuilder(8, 7).uneven(3, 3).recompute(Recompute::selective);
  // context parallelism: Llama 2 70B's 4096 tokens over cp 2 (8 x 2 x 4 x 16 GPUs), SP, ZeRO-1
  const PlanSpec e = PlanBuilder(8, 4).cp(2).sequence_parallel().recompute(Recompute::selective).zero(1);
  PlanFile fe = plan_file("llama2-70b", 1024, 1024, e);
  fe.job.framework = "megatron-core";  // a stack that runs it (fused attention, a cp ring)
  apply_stack(load_stack("megatron-core"), fe.job);
  return {plan_file("mt-nlg-530b", 2240, 1920, a), plan_file("gpt3-175b", 1536, 1536, b), fc,
          plan_file("gpt3-175b", 448, 1792, d), fe};
}

bool bash_n(const std::string& script) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("parallax_export_" + std::to_string(getpid()) + ".sh");
  std::ofstream(path) << script;
  const int rc = std::system(("bash -n " + path.string()).c_str());
  std::filesystem::remove(path);
  return rc == 0;
}

}  // namespace

TEST_CASE("Megatron-LM arguments round-trip to the same plan and model") {
  for (const PlanFile& f : three_plans()) {
    INFO(f.model.name);
    const std::string text = megatron_args_text(f);
    CHECK(text.find("--virtual-pipeline-model-parallel-size") == std::string::npos);
    const PlanFile back = parse_megatron_args(split_args(text), f);
    CHECK(back.plan == f.plan);
    CHECK(back.model.layers == f.model.layers);
    CHECK(back.model.hidden == f.model.hidden);
    CHECK(back.model.heads == f.model.heads);
    CHECK(back.model.kv_heads == f.model.kv_heads);
    CHECK(back.model.ffn_hidden == f.model.ffn_hidden);
    CHECK(back.model.activation == f.model.activation);
    CHECK(back.model.norm == f.model.norm);
    CHECK(back.model.position == f.model.position);
    CHECK(back.model.tied_embeddings == f.model.tied_embeddings);
    CHECK(back.model.linear_bias == f.model.linear_bias);
    CHECK(back.model.dropout == f.model.dropout);
    CHECK(back.job.global_batch == f.job.global_batch);
    CHECK(back.job.dtype == f.job.dtype);
  }
}

TEST_CASE("Megatron-LM's RoPE base and Llama 3.1 scaling round-trip; what its flags cannot say is refused") {
  // Llama 3.1 8B: rope_base 500000, scaling factor 8 (low 1, high 4, original 8192: Megatron-LM's
  // fixed numbers, megatron/core/models/common/embeddings/rotary_pos_embedding.py).
  PlanFile f = plan_file("llama3.1-8b", 512, 1024, test::PlanBuilder(8, 4).recompute(Recompute::full));
  REQUIRE(f.model.has_rope_scaling());
  const auto a = megatron_args(f);
  auto value = [&](const std::string& flag) {
    const auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() ? std::string("absent") : it + 1 == a.end() ? std::string("") : *(it + 1);
  };
  CHECK(value("--rotary-base") == "500000");
  CHECK(std::find(a.begin(), a.end(), "--use-rope-scaling") != a.end());
  CHECK(value("--rope-scaling-factor") == "8");
  const PlanFile back = parse_megatron_args(a, f);
  CHECK(back.model.rope_base == 500000);
  CHECK(back.model.rope_scaling == f.model.rope_scaling);
  CHECK(megatron_args(back) == a);

  // Without the scaling flag no scaling; without --rotary-base Megatron-LM's 10000.
  std::vector<std::string> plain;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--use-rope-scaling") continue;
    if (a[i] == "--rotary-base" || a[i] == "--rope-scaling-factor") {
      ++i;
      continue;
    }
    plain.push_back(a[i]);
  }
  const PlanFile unscaled = parse_megatron_args(plain, f);
  CHECK_FALSE(unscaled.model.has_rope_scaling());
  CHECK(unscaled.model.rope_base == 10000);
  // --use-rope-scaling alone: Megatron-LM's default factor 8.
  plain.push_back("--use-rope-scaling");
  CHECK(parse_megatron_args(plain, f).model.rope_scaling == RopeScaling{8, 1, 4, 8192});

  // Scaling over another original context, a fractional base: Megatron-LM's flags cannot say it.
  PlanFile other = f;
  other.model.rope_scaling.original_max_position = 4096;
  CHECK_THROWS_WITH(megatron_args(other), Catch::Contains("fixes low_freq_factor 1, high_freq_factor 4"));
  other = f;
  other.model.rope_base = 10000.5;
  CHECK_THROWS_WITH(megatron_args(other), Catch::Contains("--rotary-base is an integer"));
  std::vector<std::string> bad = a;
  bad[static_cast<size_t>(std::find(bad.begin(), bad.end(), "--rope-scaling-factor") - bad.begin()) + 1] = "0.5";
  CHECK_THROWS_AS(parse_megatron_args(bad, f), InputError);
}

TEST_CASE("Megatron-LM argument names and values for the interleaved plan") {
  const PlanFile f = three_plans()[1];  // 96 layers, pp 8, vpp 3: 4 layers per virtual stage
  const auto a = megatron_args(f);
  auto value = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == flag) return a[i + 1];
    }
    return std::string("absent");
  };
  CHECK(value("--num-layers-per-virtual-pipeline-stage") == "4");
  CHECK(value("--tensor-model-parallel-size") == "4");
  CHECK(value("--recompute-granularity") == "selective");
  CHECK(value("--global-batch-size") == "1536");
  CHECK(std::find(a.begin(), a.end(), "--use-distributed-optimizer") != a.end());
  CHECK(std::find(a.begin(), a.end(), "--sequence-parallel") != a.end());
}

TEST_CASE("Megatron-LM's dropout: its 0.1 default unsaid, a model without dropout says 0 for both") {
  const std::vector<PlanFile> plans = three_plans();
  const auto gpt = megatron_args(plans[1]);  // gpt3-175b: dropout 0.1, Megatron-LM's default
  CHECK(std::find(gpt.begin(), gpt.end(), "--hidden-dropout") == gpt.end());
  const auto llama = megatron_args(plans[2]);  // llama2-70b: no dropout
  const auto at = std::find(llama.begin(), llama.end(), "--hidden-dropout");
  REQUIRE(at != llama.end());
  CHECK(*(at + 1) == "0");
  const auto attn = std::find(llama.begin(), llama.end(), "--attention-dropout");
  REQUIRE(attn != llama.end());
  CHECK(*(attn + 1) == "0");
  // Parallax's model has one dropout probability: a command line with two is refused.
  std::vector<std::string> two = llama;
  *(std::find(two.begin(), two.end(), "--attention-dropout") + 1) = "0.1";
  CHECK_THROWS_AS(parse_megatron_args(two, plans[2]), InputError);
}

TEST_CASE("interleaving in micro-batch groups exports Megatron-Core's group size and parses back") {
  // gpt3-175b on 640 GPUs, tp 8 pp 8 vpp 3: dp 10, 1500 / 10 = 150 micro-batches, 150 % 8 = 6,
  // so groups of pp cannot run; 150 % 9 = 6 < 8 neither; groups of 10 can (150 % 10 = 0).
  PlanSpec p = test::PlanBuilder(8, 8).interleaved(3).recompute(Recompute::selective).sequence_parallel();
  p.microbatch_group = 10;
  PlanFile f = plan_file("gpt3-175b", 640, 1500, p);
  f.job.framework = "megatron-core";
  f.job.capabilities = load_stack("megatron-core").capabilities;
  const std::vector<std::string> a = megatron_args(f);
  const auto it = std::find(a.begin(), a.end(), "--microbatch-group-size-per-virtual-pipeline-stage");
  REQUIRE(it != a.end());
  CHECK(*(it + 1) == "10");
  const PlanFile back = parse_megatron_args(a, f);
  CHECK(back.plan == f.plan);
  CHECK(megatron_args(back) == a);
  // The default group, pp, is not written (Megatron-Core's default), and reads back as 0.
  PlanFile def = plan_file("gpt3-175b", 640, 1600, test::PlanBuilder(8, 8).interleaved(3));
  const std::vector<std::string> d = megatron_args(def);
  CHECK(std::find(d.begin(), d.end(), "--microbatch-group-size-per-virtual-pipeline-stage") == d.end());
  // Megatron-LM of 2021-2022 walks groups of pp only: its stack refuses the plan.
  f.job.framework = "megatron-lm";
  f.job.capabilities = load_stack("megatron-lm").capabilities;
  CHECK_THROWS_WITH(megatron_args(f), Catch::Contains("stack \"megatron-lm\" runs interleaved micro-batches in "
                                                      "groups of pp (8) only (got microbatch_group 10)"));
}

TEST_CASE("context parallelism exports as --context-parallel-size, the stack's ring type, and parses back") {
  PlanFile f = three_plans()[4];
  REQUIRE(f.plan.cp == 2);
  REQUIRE(f.plan.dp == 16);  // 1024 / (8 x 2 x 4)
  const auto a = megatron_args(f);
  auto after = [&](const std::string& flag) {
    const auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("absent") : *(it + 1);
  };
  CHECK(after("--context-parallel-size") == "2");
  CHECK(after("--cp-comm-type") == "p2p");
  const PlanFile back = parse_megatron_args(a, f);
  CHECK(back.plan == f.plan);
  CHECK(megatron_args(back) == a);
  // NeMo 1.x's arguments name no ring type; a plan without cp names neither flag.
  f.job.framework = "nemo-1";
  apply_stack(load_stack("nemo-1"), f.job);
  const auto plain = megatron_args(f);
  CHECK(std::find(plain.begin(), plain.end(), "--cp-comm-type") == plain.end());
  const auto none = megatron_args(three_plans()[0]);
  CHECK(std::find(none.begin(), none.end(), "--context-parallel-size") == none.end());
  // Another ring than the one modelled is refused on import.
  std::vector<std::string> a2a = a;
  *(std::find(a2a.begin(), a2a.end(), "--cp-comm-type") + 1) = "a2a";
  CHECK_THROWS_WITH(parse_megatron_args(a2a, f), Catch::Contains("only p2p"));
}

TEST_CASE("DeepSpeed exports refuse context parallelism with the reason") {
  const PlanFile f = three_plans()[4];
  CHECK_THROWS_WITH(deepspeed_config(f), Catch::Contains("DeepSpeed has no context parallelism (cp 2)") &&
                                             Catch::Contains("Ulysses"));
  CHECK_THROWS_WITH(megatron_deepspeed_args(f, {}, "ds.json"),
                    Catch::Contains("Megatron-DeepSpeed has no context parallelism (cp 2)"));
}

TEST_CASE("DeepSpeed: train_batch_size = micro x accumulation x dp") {
  const PlanFile f = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(2, 1).batches(4, 1).zero(3));
  const auto j = deepspeed_config(f);
  CHECK(j["train_batch_size"].get<int64_t>() ==
        j["train_micro_batch_size_per_gpu"].get<int64_t>() *
            j["gradient_accumulation_steps"].get<int64_t>() * f.plan.dp);
  CHECK(j["train_batch_size"].get<int64_t>() == 1024);
  CHECK(j["zero_optimization"]["stage"].get<int>() == 3);
  CHECK(j["bf16"]["enabled"].get<bool>());
}

TEST_CASE("invalid combinations are refused with a reason") {
  const PlanFile zero3_pp = plan_file("mt-nlg-530b", 2240, 1920, test::PlanBuilder(8, 35).zero(3));
  CHECK_THROWS_WITH(deepspeed_config(zero3_pp), Catch::Contains("ZeRO-2/3"));
  CHECK_THROWS_WITH(megatron_args(zero3_pp), Catch::Contains("ZeRO-2/3"));
  PlanFile inter = three_plans()[1];
  CHECK_THROWS_WITH(deepspeed_config(inter), Catch::Contains("interleaved"));
  PlanFile alibi = plan_file("bloom-176b", 320, 320, test::PlanBuilder(8, 5));
  CHECK_THROWS_AS(megatron_args(alibi), InputError);
  // TorchTitan's interleaving over unequal virtual stages (96 layers: 3 + 5 x 18 + 3 on pp 7,
  // two chunks per rank) has no Megatron-LM flags: its virtual stages hold equal layers.
  PlanFile unequal = plan_file("gpt3-175b", 448, 1792, test::PlanBuilder(8, 7).uneven(3, 3).interleaved(2));
  CHECK_THROWS_WITH(megatron_args(unequal), Catch::Contains("equal layers"));
}

TEST_CASE("SLURM scripts and the mpirun script pass bash -n") {
  for (const PlanFile& f : three_plans()) {
    const LaunchOptions o;
    const std::string s1 = slurm_megatron_script(f, o);
    CHECK(bash_n(s1));
    CHECK(s1.find("#SBATCH --nodes=" + std::to_string(f.gpus / 8)) != std::string::npos);
    CHECK(s1.find("MASTER_ADDR") != std::string::npos);
    CHECK(s1.find("--tensor-model-parallel-size " + std::to_string(f.plan.tp)) != std::string::npos);
  }
  // parallax run: the MT-NLG plan (GPT, 1F1B, even stages) is one the executor runs.
  const PlanFile mtnlg = three_plans()[0];
  const std::string s2 = slurm_parallax_script(mtnlg, LaunchOptions{});
  CHECK(bash_n(s2));
  CHECK(s2.find("-np 2240") != std::string::npos);
  const std::string m = mpirun_script(mtnlg, LaunchOptions{});
  CHECK(bash_n(m));
  CHECK(m.find("node280 slots=8") != std::string::npos);  // 2240 GPUs / 8 per node
  CHECK(m.find("node281") == std::string::npos);
  // On A100s the CUDA backend, its streams each with a hardware queue on every rank.
  for (const std::string& s : {s2, m}) {
    CHECK(s.find("parallax run --backend cuda --plan") != std::string::npos);
    CHECK(s.find("export CUDA_DEVICE_MAX_CONNECTIONS=8") != std::string::npos);
    CHECK(s.find("-x CUDA_DEVICE_MAX_CONNECTIONS") != std::string::npos);
  }
}

TEST_CASE("a launch of parallax run is refused for a plan the executor cannot run") {
  // Llama 2 70B (grouped-query attention, RoPE) runs; ALiBi does not: the script would start
  // ranks that each stop at once.
  const PlanFile llama = three_plans()[2];
  CHECK(mpirun_script(llama, LaunchOptions{}).find("parallax run") != std::string::npos);
  PlanFile alibi = llama;
  alibi.model.position = Position::alibi;
  CHECK_THROWS_WITH(mpirun_script(alibi, LaunchOptions{}),
                    Catch::Contains("parallax run cannot run this plan: stack \"parallax-executor\" has "
                                    "no alibi position embedding"));
  CHECK_THROWS_WITH(slurm_parallax_script(three_plans()[3], LaunchOptions{}),
                    Catch::Contains("splits the pipeline evenly only"));
  // A CPU cluster's ranks are cores: the CPU backend, no CUDA environment.
  PlanFile cpu = plan_file("gpt-tiny", 2, 4, test::PlanBuilder(1, 2));
  cpu.cluster = load_cluster("cpu-local");
  const std::string s = mpirun_script(cpu, LaunchOptions{});
  CHECK(s.find("parallax run --plan") != std::string::npos);
  CHECK(s.find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
}

TEST_CASE("ZeRO-2/3 export as Megatron FSDP and fp8 as Transformer Engine's flags, and parse back") {
  // megatron/training/arguments.py: --use-megatron-fsdp with --data-parallel-sharding-strategy
  // optim_grads_params (ZeRO-3) or optim_grads (ZeRO-2) needs --ckpt-format fsdp_dtensor.
  for (int64_t zero : {2, 3}) {
    PlanFile f = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(zero));
    f.cluster = load_cluster("dgx-h100-superpod");  // fp8 math
    f.job.dtype = Dtype::fp8;
    f.job.fp8.scaling = zero == 2 ? Fp8Scaling::current : Fp8Scaling::delayed;
    const std::vector<std::string> a = megatron_args(f);
    auto after = [&](const std::string& flag) {
      const auto it = std::find(a.begin(), a.end(), flag);
      return it == a.end() || it + 1 == a.end() ? std::string("absent") : *(it + 1);
    };
    CHECK(std::find(a.begin(), a.end(), "--use-megatron-fsdp") != a.end());
    CHECK(after("--data-parallel-sharding-strategy") == (zero == 2 ? "optim_grads" : "optim_grads_params"));
    CHECK(after("--ckpt-format") == "fsdp_dtensor");
    CHECK(after("--fp8-format") == "hybrid");
    CHECK(after("--fp8-recipe") == (zero == 2 ? "tensorwise" : "delayed"));
    CHECK(std::find(a.begin(), a.end(), "--bf16") != a.end());  // Megatron's fp8 runs under bf16
    const PlanFile back = parse_megatron_args(a, f);
    CHECK(back.plan == f.plan);
    CHECK(back.job.dtype == Dtype::fp8);
    CHECK(back.job.fp8.scaling == f.job.fp8.scaling);
    CHECK(megatron_args(back) == a);
  }
  // MXFP8 is Megatron-LM's --fp8-recipe mxfp8 (arguments.py's choices), on Blackwell only.
  PlanFile mx = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(1));
  mx.cluster = load_cluster("dgx-b200-superpod");
  mx.job.dtype = Dtype::fp8;
  mx.job.fp8.scaling = Fp8Scaling::mxfp8;
  const std::vector<std::string> ma = megatron_args(mx);
  const auto recipe = std::find(ma.begin(), ma.end(), "--fp8-recipe");
  REQUIRE(recipe + 1 < ma.end());
  CHECK(*(recipe + 1) == "mxfp8");
  CHECK(parse_megatron_args(ma, mx).job.fp8.scaling == Fp8Scaling::mxfp8);
  PlanFile hopper = mx;
  hopper.cluster = load_cluster("dgx-h100-superpod");
  CHECK_THROWS_WITH(parse_megatron_args(ma, hopper),
                    Catch::Contains("--fp8-recipe") && Catch::Contains("mxfp8 needs Blackwell"));
  // Megatron FSDP checkpoints only as fsdp_dtensor: a command line without it is refused.
  PlanFile f = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(3));
  std::vector<std::string> a = megatron_args(f);
  a.erase(std::find(a.begin(), a.end(), "--ckpt-format"), std::find(a.begin(), a.end(), "--ckpt-format") + 2);
  CHECK_THROWS_WITH(parse_megatron_args(a, f), Catch::Contains("--ckpt-format"));
}

TEST_CASE("a plan its stack cannot run is refused by the exporter as by the planner") {
  PlanFile f = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(3));
  f.job.framework = "megatron-lm";
  f.job.capabilities = load_stack("megatron-lm").capabilities;  // ZeRO 0 or 1
  CHECK_THROWS_WITH(megatron_args(f), Catch::Contains("stack \"megatron-lm\" runs ZeRO stage 0 or 1 (got 3)"));
  f.job.framework = "megatron-core";
  f.job.capabilities = load_stack("megatron-core").capabilities;
  CHECK_NOTHROW(megatron_args(f));
}

TEST_CASE("Megatron's per-chunk block recompute, its attention backend and FSDP's own optimizer") {
  auto after = [](const std::vector<std::string>& a, const std::string& flag) {
    const auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("absent") : *(it + 1);
  };
  // core/transformer/transformer_block.py: --recompute-num-layers counts the layers of each model
  // chunk, so 8 layers of a stage with vpp 2 are 4 per chunk, and parse back as 8.
  PlanSpec p = test::PlanBuilder(8, 8).interleaved(2).recompute(Recompute::full, 8);
  PlanFile f = plan_file("gpt3-175b", 1536, 1536, p);  // 12 layers per stage, 6 per chunk
  std::vector<std::string> a = megatron_args(f);
  CHECK(after(a, "--recompute-method") == "block");
  CHECK(after(a, "--recompute-num-layers") == "4");
  CHECK(parse_megatron_args(a, f).plan == f.plan);
  f.plan.recompute_layers = 5;  // 2.5 per chunk: no Megatron argument says it
  CHECK_THROWS_WITH(megatron_args(f), Catch::Contains("must be divisible by vpp"));
  // A stack predicted with unfused attention asks Megatron-Core (fused by default) for it.
  f.plan.recompute_layers = 8;
  f.job.attention = Attention::unfused;
  a = megatron_args(f);
  CHECK(after(a, "--attention-backend") == "unfused");
  CHECK(parse_megatron_args(a, f).job.attention == Attention::unfused);
  f.job.attention = Attention::fused;
  a = megatron_args(f);
  CHECK(after(a, "--attention-backend") == "absent");
  // ZeRO-1 is the distributed optimizer; under Megatron FSDP the flag is left out (v1 sets it,
  // v2 refuses it: arguments.py, the --use-megatron-fsdp checks).
  for (int64_t zero : {1, 2, 3}) {
    PlanFile z = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(zero));
    const std::vector<std::string> za = megatron_args(z);
    CHECK((std::find(za.begin(), za.end(), "--use-distributed-optimizer") != za.end()) == (zero == 1));
    CHECK(parse_megatron_args(za, z).plan.zero == zero);
  }
}

TEST_CASE("a GB200 NVL72 launch runs 4 GPUs per host, 18 hosts per NVLink domain") {
  // The preset's node is a rack's 72-GPU NVLink domain; a host (a compute tray, one SLURM node)
  // has 4 GPUs: 144 GPUs are 36 hosts.
  PlanFile f = plan_file("llama2-70b", 144, 576, test::PlanBuilder(4, 2).recompute(Recompute::selective));
  f.cluster = load_cluster("gb200-nvl72");
  CHECK(plan_hosts(f) == 36);
  const std::string s = slurm_megatron_script(f, LaunchOptions{});
  CHECK(bash_n(s));
  CHECK(s.find("#SBATCH --nodes=36\n") != std::string::npos);
  CHECK(s.find("#SBATCH --gpus-per-node=4\n") != std::string::npos);
  CHECK(s.find("--nproc-per-node 4 ") != std::string::npos);
  CHECK(s.find("--segment=18") != std::string::npos);
  // An 8-GPU DGX is its own host: no note.
  CHECK(slurm_megatron_script(three_plans()[0], LaunchOptions{}).find("--segment") == std::string::npos);
  // 256 GPUs are 64 hosts, which 18 does not divide (SLURM refuses the job): the plan's cluster
  // takes the racks in segments of 16 hosts, and the launch says so.
  PlanFile g = plan_file("llama2-70b", 256, 512, test::PlanBuilder(4, 2).recompute(Recompute::selective));
  g.cluster = with_job_segments(load_cluster("gb200-nvl72"), 256, "test", "--gpus");
  CHECK(plan_hosts(g) == 64);
  const std::string gs = slurm_megatron_script(g, LaunchOptions{});
  CHECK(gs.find("--segment=16") != std::string::npos);
  // Inside one rack the segment is the job's own hosts: 8 GPUs are 2 hosts.
  PlanFile h = plan_file("llama2-7b", 8, 64, test::PlanBuilder(2, 1));
  h.cluster = load_cluster("gb200-nvl72");
  CHECK(slurm_megatron_script(h, LaunchOptions{}).find("--segment=2)") != std::string::npos);
}

TEST_CASE("the Megatron-LM SLURM launch has what Megatron-LM and SLURM require") {
  const std::vector<PlanFile> plans = three_plans();
  LaunchOptions o;
  o.megatron_dir = "/shared/Megatron-LM";
  o.partition = "batch";
  o.account = "llm";
  o.time_limit = "04:00:00";
  o.container_image = "nvcr.io#nvidia/pytorch:25.01-py3";
  const std::string s = slurm_megatron_script(plans[0], o);  // tp 8 on A100
  CHECK(bash_n(s));
  // validate_args: tp > 1 before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1.
  CHECK(s.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos);
  CHECK(s.find("\"$MEGATRON_DIR/pretrain_gpt.py\"") != std::string::npos);
  CHECK(s.find("MEGATRON_DIR=/shared/Megatron-LM") != std::string::npos);
  for (const char* want : {"#SBATCH --partition=batch", "#SBATCH --account=llm", "#SBATCH --time=04:00:00",
                           "--cpus-per-task=\"$SLURM_CPUS_ON_NODE\"", "--kill-on-bad-exit=1",
                           "--container-image=nvcr.io#nvidia/pytorch:25.01-py3", "--mock-data",
                           "--tokenizer-type NullTokenizer", "--lr 3.0e-4", "--train-iters 100"})
    CHECK(s.find(want) != std::string::npos);
  // The plan with tokens trains for ceil(tokens / (batch x seq)) iterations: 2e12 / (1024 x 4096).
  CHECK(slurm_megatron_script(plans[2], LaunchOptions{}).find("--train-iters 476838") != std::string::npos);
  // Megatron FSDP asserts the variable is not 1.
  PlanFile fsdp = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(3));
  const std::string f = slurm_megatron_script(fsdp, LaunchOptions{});
  CHECK(f.find("unset CUDA_DEVICE_MAX_CONNECTIONS") != std::string::npos);
  CHECK(f.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") == std::string::npos);
  // Real data needs its tokenizer.
  LaunchOptions d;
  d.data_path = "/data/pile_text_document";
  CHECK_THROWS_WITH(slurm_megatron_script(plans[0], d), Catch::Contains("--tokenizer"));
  d.tokenizer_model = "/models/gpt2";
  const std::string r = slurm_megatron_script(plans[0], d);
  CHECK(r.find("--data-path /data/pile_text_document") != std::string::npos);
  CHECK(r.find("--mock-data") == std::string::npos);
}

TEST_CASE("DeepSpeed with bf16 accumulates gradients in fp32, as the plan's 18 bytes per parameter assume") {
  const PlanFile f = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(2, 1).batches(4, 1).zero(1));
  CHECK(deepspeed_config(f)["data_types"]["grad_accum_dtype"] == "fp32");
}

TEST_CASE("a Megatron-LM command line for the MT-NLG plan round-trips: args, plan, args") {
  // MT-NLG 530B as Smith et al. 2022 ran it: tp 8 x pp 35 on 2240 A100s, batch 1920, full
  // recompute; the command line a user would paste, parsed and written back, is identical.
  const PlanFile mtnlg = three_plans()[0];
  const std::vector<std::string> args = megatron_args(mtnlg);
  const PlanFile plan = parse_megatron_args(args, mtnlg);
  CHECK(plan.plan.tp == 8);
  CHECK(plan.plan.pp == 35);
  CHECK(plan.plan.dp == 8);  // 2240 / (8 x 35)
  CHECK(plan.plan.num_micro_batches == 240);  // 1920 / (1 x 8)
  CHECK(megatron_args(plan) == args);
}

TEST_CASE("Llama exports say --disable-bias-linear; GPT exports keep their biases") {
  const std::vector<PlanFile> plans = three_plans();
  const auto llama = megatron_args(plans[2]);
  CHECK(std::find(llama.begin(), llama.end(), "--disable-bias-linear") != llama.end());
  CHECK(parse_megatron_args(llama, plans[2]).model.linear_bias == false);
  const auto gpt = megatron_args(plans[1]);
  CHECK(std::find(gpt.begin(), gpt.end(), "--disable-bias-linear") == gpt.end());
}

TEST_CASE("the export turns on the overlaps of the stack the plan was predicted for") {
  // gpt3-175b on 1536 GPUs: tp 4, pp 8, vpp 3, sp, ZeRO-1 (the interleaved plan).
  PlanFile f = three_plans()[1];
  auto has = [](const std::vector<std::string>& a, const char* flag) {
    return std::find(a.begin(), a.end(), flag) != a.end();
  };
  f.job.overlap = load_stack("megatron-core").overlap;  // everything overlapped
  const auto core = megatron_args(f);
  CHECK(has(core, "--overlap-grad-reduce"));
  CHECK(has(core, "--overlap-param-gather"));  // validate_args: needs the distributed optimizer
  CHECK(has(core, "--tp-comm-overlap"));       // validate_args: needs sequence parallelism
  CHECK_FALSE(has(core, "--no-overlap-p2p-communication"));
  f.job.overlap = load_stack("megatron-lm").overlap;  // Megatron-LM of 2021: nothing overlapped
  const auto lm = megatron_args(f);
  CHECK_FALSE(has(lm, "--overlap-grad-reduce"));
  CHECK_FALSE(has(lm, "--tp-comm-overlap"));
  CHECK(has(lm, "--no-overlap-p2p-communication"));  // pp 8 > 2
  CHECK(parse_megatron_args(lm, f).plan == f.plan);
  // Without sequence parallelism there is no TP overlap to turn on.
  f.job.overlap = load_stack("megatron-core").overlap;
  f.plan.sequence_parallel = false;
  CHECK_FALSE(has(megatron_args(f), "--tp-comm-overlap"));
}

TEST_CASE("the Megatron-DeepSpeed launch: its argument set, its DeepSpeed config, loud data") {
  // MT-NLG as it ran: Megatron-DeepSpeed, tp 8 x pp 35, ZeRO-1 (Smith et al. 2022).
  PlanFile f = three_plans()[0];
  f.plan.zero = 1;
  const std::string s = slurm_megatron_deepspeed_script(f, LaunchOptions{});
  CHECK(bash_n(s));
  for (const char* want : {"--deepspeed", "--zero-stage 1", "--pipeline-model-parallel-size 35",
                           "--deepspeed-activation-checkpointing", "--recompute-granularity full",
                           "${DATA_PATH:?", "${TOKENIZER_MODEL:?", "--train-iters 100"})
    CHECK(s.find(want) != std::string::npos);
  CHECK(s.find("--no-pipeline-parallel") == std::string::npos);
  // The config the arguments name is the plan's DeepSpeed config, written by the script.
  const std::string begin = "<<'DSCONFIG'\n", end = "\nDSCONFIG\n";
  const size_t a = s.find(begin), b = s.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(nlohmann::json::parse(s.substr(a + begin.size(), b - a - begin.size())) == deepspeed_config(f));
  // Its pipeline engine has no interleaving.
  CHECK_THROWS_WITH(slurm_megatron_deepspeed_script(three_plans()[1], LaunchOptions{}),
                    Catch::Contains("no interleaved schedule"));
  // Given data and tokenizer, they are used; without pipelining the model runs unpiped (ZeRO-3).
  LaunchOptions o;
  o.data_path = "/data/oscar_text_document";
  o.tokenizer_model = "bigscience/tokenizer";
  const PlanFile z3 = plan_file("gpt3-175b", 64, 1024, test::PlanBuilder(8, 1).batches(4, 1).zero(3));
  const std::string d = slurm_megatron_deepspeed_script(z3, o);
  CHECK(d.find("--data-path /data/oscar_text_document") != std::string::npos);
  CHECK(d.find("--no-pipeline-parallel") != std::string::npos);
  CHECK(d.find("${DATA_PATH") == std::string::npos);
}

TEST_CASE("Megatron-DeepSpeed: recompute and ALiBi as its own code runs them") {
  // Found by running microsoft/Megatron-DeepSpeed's argument and model code on the exports.
  auto has = [](const std::vector<std::string>& a, const std::string& x) {
    return std::find(a.begin(), a.end(), x) != a.end();
  };
  const std::string cfg = "ds.json";
  // gpt_model.py (GPTModelPipe): the pipeline recomputes every layer or none.
  PlanFile block_pp = plan_file("gpt3-175b", 512, 512, test::PlanBuilder(8, 8).recompute(Recompute::full, 6));
  CHECK_THROWS_WITH(megatron_deepspeed_args(block_pp, {}, cfg), Catch::Contains("every layer or none"));
  // Without pipelining, the first K layers run through Megatron's block checkpointing, which the
  // DeepSpeed checkpointing flag would bypass (transformer.py checkpoints every layer under it).
  PlanFile block = plan_file("megatron-8.3b", 8, 64, test::PlanBuilder(8, 1).recompute(Recompute::full, 24));
  std::vector<std::string> a = megatron_deepspeed_args(block, {}, cfg);
  CHECK(has(a, "block"));
  CHECK_FALSE(has(a, "--deepspeed-activation-checkpointing"));
  // Sequence parallelism with DeepSpeed's checkpointing: partitioned activations said on the
  // command line, which wins over the config (checkpointing.py, configure).
  PlanFile sp = plan_file("gpt3-175b", 512, 512, test::PlanBuilder(8, 8).recompute(Recompute::full).sequence_parallel());
  a = megatron_deepspeed_args(sp, {}, cfg);
  CHECK(has(a, "--deepspeed-activation-checkpointing"));
  CHECK(has(a, "--partition-activations"));
  CHECK(deepspeed_config(sp)["activation_checkpointing"]["partition_activations"].get<bool>());
  // RoPE's base as megatron/arguments.py names it (dest rope_theta); Llama 3.1's scaled RoPE has
  // no counterpart there and is refused.
  a = megatron_deepspeed_args(plan_file("llama3-8b", 8, 64, test::PlanBuilder(8, 1)), {}, cfg);
  const auto theta = std::find(a.begin(), a.end(), "--rotary-position-embeddings-theta");
  REQUIRE(theta != a.end());
  CHECK(*(theta + 1) == "500000");  // Llama 3's rope_theta (its config.json)
  CHECK_THROWS_WITH(megatron_deepspeed_args(plan_file("llama3.1-8b", 8, 64, test::PlanBuilder(8, 1)), {}, cfg),
                    Catch::Contains("no Llama 3.1 frequency scaling"));
  // No --position-embedding-type in microsoft/Megatron-DeepSpeed: BLOOM's ALiBi is refused.
  CHECK_THROWS_WITH(megatron_deepspeed_args(plan_file("bloom-176b", 384, 2048, test::PlanBuilder(4, 14)), {}, cfg),
                    Catch::Contains("no ALiBi argument"));
}

TEST_CASE("Megatron-Core's MoE flags round-trip to the same plan and experts") {
  using test::PlanBuilder;
  // Mixtral 8x7B on 64 GPUs: tp 2 with SP, ep 8 with the experts unsplit (etp 1), pp 2.
  PlanFile mixtral = plan_file("mixtral-8x7b", 64, 256, PlanBuilder(2, 2).ep(8, 1).sequence_parallel().zero(1));
  // DeepSeek-V3-shaped on 256 GPUs: ep 16, etp = tp (0), the first three layers dense, one shared
  // expert, sigmoid scores.
  PlanFile deepseek = plan_file("deepseek-v3-shaped", 256, 512, PlanBuilder(2, 1).ep(16).sequence_parallel());
  for (PlanFile* f : {&mixtral, &deepseek}) {
    f->job.framework = "megatron-core";
    apply_stack(load_stack("megatron-core"), f->job);
    INFO(f->model.name);
    const std::string text = megatron_args_text(*f);
    const PlanFile back = parse_megatron_args(split_args(text), *f);
    CHECK(back.plan == f->plan);
    CHECK(back.model.moe == f->model.moe);
    CHECK(back.model.moe_layers() == f->model.moe_layers());
  }
  // DeepSeek's pattern as Megatron-Bridge writes it, a Python expression.
  std::vector<std::string> a = megatron_args(deepseek);
  const auto freq = std::find(a.begin(), a.end(), "--moe-layer-freq");
  REQUIRE(freq != a.end());
  *(freq + 1) = "([0]*3+[1]*58)";
  CHECK(parse_megatron_args(a, deepseek).model.moe == deepseek.model.moe);
  // A pattern outside "the first k dense, then every n-th" is refused, naming the flag.
  *(freq + 1) = "[1]*3+[0]*58";
  CHECK_THROWS_AS(parse_megatron_args(a, deepseek), InputError);
  // Megatron-LM's default dispatcher (allgather) is not what Parallax costs.
  a = megatron_args(mixtral);
  const auto disp = std::find(a.begin(), a.end(), "--moe-token-dispatcher-type");
  REQUIRE(disp != a.end());
  *(disp + 1) = "allgather";
  CHECK_THROWS_AS(parse_megatron_args(a, mixtral), InputError);
}

TEST_CASE("an MoE import without --moe-ffn-hidden-size gives the experts the FFN's size, as Megatron-LM does") {
  // Megatron-LM's arguments.py: moe_ffn_hidden_size defaults to ffn_hidden_size, which itself
  // defaults to 4 * hidden (gelu) when --ffn-hidden-size is not given.
  const std::string text = "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 128 "
                           "--global-batch-size 8 --micro-batch-size 1 --vocab-size 32000 --num-experts 8 "
                           "--moe-router-topk 2 --moe-token-dispatcher-type alltoall";
  const PlanFile f = import_megatron_command(text, plan_file("gpt-tiny", 8, 8, test::PlanBuilder(1, 1))).file;
  CHECK(f.model.ffn_hidden == 4 * 1024);
  CHECK(f.model.moe.expert_ffn_hidden == 4 * 1024);
  const PlanFile g = import_megatron_command(text + " --ffn-hidden-size 2048",
                                             plan_file("gpt-tiny", 8, 8, test::PlanBuilder(1, 1))).file;
  CHECK(g.model.moe.expert_ffn_hidden == 2048);
}

// Megatron-Core's EP all-to-all overlap changes the iteration time, and the cost model does not
// cost it: an import says so apart from the arguments that do not change the plan.
TEST_CASE("an import lists the EP all-to-all overlap as not costed, apart from the arguments it skips") {
  const std::string text = "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 128 "
                           "--global-batch-size 8 --micro-batch-size 1 --vocab-size 32000 --num-experts 8 "
                           "--moe-router-topk 2 --moe-token-dispatcher-type alltoall --expert-model-parallel-size 2 "
                           "--log-interval 10 --overlap-moe-expert-parallel-comm --delay-wgrad-compute";
  const MegatronImport imp = import_megatron_command(text, plan_file("gpt-tiny", 8, 8, test::PlanBuilder(1, 1)));
  CHECK(imp.ignored == std::vector<std::string>{"--log-interval"});
  CHECK(imp.not_costed ==
        std::vector<std::string>{"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"});
  CHECK(imp.file.plan.ep == 2);
}

// The flex dispatcher as Megatron-Bridge's H100 Qwen3 recipe runs it (moe_token_dispatcher_type
// "flex", moe_flex_dispatcher_backend "hybridep"); Megatron-Core's own rules (transformer_config.py
// __post_init__) on --moe-enable-deepep, and a backend Parallax does not cost, are refused.
TEST_CASE("the flex token dispatcher exports with its backend and parses back") {
  using test::PlanBuilder;
  for (MoeDispatcher d : kMoeDispatchers) {
    PlanFile qwen = plan_file("qwen3-30b-a3b", 16, 512, PlanBuilder(1, 1).ep(16));
    qwen.plan.moe_dispatcher = d;
    qwen.job.framework = "megatron-core";
    apply_stack(load_stack("megatron-core"), qwen.job);
    INFO(to_string(d));
    const std::string text = megatron_args_text(qwen);
    const bool flex = d != MoeDispatcher::alltoall;
    CHECK((text.find("--moe-token-dispatcher-type flex") != std::string::npos) == flex);
    CHECK((text.find(std::string("--moe-flex-dispatcher-backend ") + to_string(d)) != std::string::npos) == flex);
    PlanFile base = qwen;
    base.plan.moe_dispatcher = MoeDispatcher::alltoall;
    CHECK(parse_megatron_args(split_args(text), base).plan == qwen.plan);
  }
  PlanFile qwen = plan_file("qwen3-30b-a3b", 16, 512, PlanBuilder(1, 1).ep(16));
  qwen.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), qwen.job);
  std::vector<std::string> a = megatron_args(qwen);
  // The deprecated spelling: flex with --moe-enable-deepep is the deepep backend.
  const auto disp = std::find(a.begin(), a.end(), "--moe-token-dispatcher-type");
  REQUIRE(disp != a.end());
  *(disp + 1) = "flex";
  std::vector<std::string> deepep = a;
  deepep.push_back("--moe-enable-deepep");
  CHECK(parse_megatron_args(deepep, qwen).plan.moe_dispatcher == MoeDispatcher::deepep);
  // Without flex, or beside another backend, Megatron-Core raises; so does Parallax.
  std::vector<std::string> bad = deepep;
  *(std::find(bad.begin(), bad.end(), "--moe-token-dispatcher-type") + 1) = "alltoall";
  CHECK_THROWS_WITH(parse_megatron_args(bad, qwen), Catch::Contains("--moe-enable-deepep") && Catch::Contains("flex"));
  bad = deepep;
  bad.insert(bad.end(), {"--moe-flex-dispatcher-backend", "hybridep"});
  CHECK_THROWS_WITH(parse_megatron_args(bad, qwen), Catch::Contains("--moe-enable-deepep"));
  bad = a;
  bad.insert(bad.end(), {"--moe-flex-dispatcher-backend", "ncclep"});
  CHECK_THROWS_WITH(parse_megatron_args(bad, qwen),
                    Catch::Contains("--moe-flex-dispatcher-backend") && Catch::Contains("ncclep"));
}

// Qwen3 runs heads 128 wide on hidden 2048 (32 heads: hidden / heads would be 64). Megatron-LM and
// Megatron-DeepSpeed say so with --kv-channels (arguments.py: kv_channels defaults to
// hidden_size // num_attention_heads); a model of default-width heads writes no flag.
TEST_CASE("heads wider than hidden / heads export as --kv-channels and parse back") {
  using test::PlanBuilder;
  PlanFile qwen = plan_file("qwen3-30b-a3b", 16, 512, PlanBuilder(1, 1).ep(16));
  qwen.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), qwen.job);
  REQUIRE(qwen.model.head_dim() == 128);
  const std::string text = megatron_args_text(qwen);
  CHECK(text.find("--kv-channels 128") != std::string::npos);
  PlanFile base = qwen;  // the parse must read the width from the flag, not keep the base's
  base.model.kv_channels = 0;
  const PlanFile back = parse_megatron_args(split_args(text), base);
  CHECK(back.model.head_dim() == 128);
  CHECK(back.model.hidden == 2048);
  CHECK(back.plan == qwen.plan);
  CHECK(back.model.moe == qwen.model.moe);
  PlanFile wide = plan_file("llama3-8b", 64, 256, PlanBuilder(2, 2));  // a dense model, heads 256 wide
  wide.model.kv_channels = 256;
  const std::vector<std::string> ds = megatron_deepspeed_args(wide, {}, "ds.json");
  const auto kv = std::find(ds.begin(), ds.end(), "--kv-channels");
  REQUIRE(kv != ds.end());
  CHECK(*(kv + 1) == "256");
  PlanFile mixtral = plan_file("mixtral-8x7b", 64, 256, PlanBuilder(2, 2).ep(8).sequence_parallel());
  mixtral.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), mixtral.job);
  CHECK(megatron_args_text(mixtral).find("--kv-channels") == std::string::npos);
  // A width Megatron-LM cannot build is refused, naming the flag: none, negative, or odd under
  // rotate-half RoPE (the model reader's rule, error row M21).
  for (const char* bad : {"0", "-3", "25"}) {
    INFO("--kv-channels " << bad);
    std::vector<std::string> a = megatron_args(qwen);
    const auto at = std::find(a.begin(), a.end(), "--kv-channels");
    REQUIRE(at != a.end());
    *(at + 1) = bad;
    const std::string rule = std::string(bad) == "25" ? "even head_dim" : "must be >= 1";
    CHECK_THROWS_WITH(parse_megatron_args(a, base),
                      Catch::Contains("--kv-channels") && Catch::Contains(rule));
  }
}

// Megatron-Bridge's Qwen3-235B-A22B recipe: 94 layers + embedding + loss over pp 8 x vpp 4. Megatron-LM
// derives vpp from --num-layers-per-virtual-pipeline-stage over layers + 2 (arguments.py), so the
// export writes 96 / 32 = 3, and the parse reads vpp 4 back.
TEST_CASE("the embedding and loss in the pipeline split export as Megatron-Core's flags and parse back") {
  using test::PlanBuilder;
  PlanFile qwen = plan_file("qwen3-235b-a22b", 256, 1024, PlanBuilder(2, 8).interleaved(4).sequence_parallel().ep(32));
  qwen.plan.etp = 1;
  qwen.plan.embedding_in_split = qwen.plan.loss_in_split = true;
  qwen.cluster = load_cluster("dgx-h100-superpod");
  qwen.job.framework = "megatron-core";
  apply_stack(load_stack("megatron-core"), qwen.job);
  REQUIRE(qwen.model.layers == 94);
  const std::string text = megatron_args_text(qwen);
  CHECK(text.find("--account-for-embedding-in-pipeline-split") != std::string::npos);
  CHECK(text.find("--account-for-loss-in-pipeline-split") != std::string::npos);
  CHECK(text.find("--num-layers-per-virtual-pipeline-stage 3") != std::string::npos);
  PlanFile base = qwen;
  base.plan.embedding_in_split = base.plan.loss_in_split = false;
  base.plan.vpp = 1;
  CHECK(parse_megatron_args(split_args(text), base).plan == qwen.plan);
  // Without the flags the same plan cannot be written: 94 layers do not divide over 32 chunks.
  qwen.plan.loss_in_split = false;
  CHECK_THROWS_WITH(megatron_args_text(qwen),
                    Catch::Contains("95 layers with the embedding or loss counted over pp 8 x vpp 4"));
}
