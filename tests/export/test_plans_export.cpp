// No plan the planner ranks is refused by its stack's own export: for every stack preset with a
// launch (Megatron-LM arguments, a DeepSpeed config, a TorchTitan job config), the top 10 of a
// search over model presets of each kind (GPT with learned positions, Llama with GQA and RoPE,
// BLOOM with ALiBi; for TorchTitan, whose models are its llama3 flavors, Llama 3 8B and 70B)
// export, and the Megatron-LM command lines pass Megatron-LM's own start-up rules
// (megatron_rules.hpp).
#include <catch2/catch.hpp>

#include "megatron_rules.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/stack_spec.hpp"
#include "parallax/costmodel/profile.hpp"
#include "parallax/export/deepspeed.hpp"
#include "parallax/export/launchers.hpp"
#include "parallax/export/megatron.hpp"
#include "parallax/export/torchtitan.hpp"
#include "parallax/planner/planner.hpp"

using namespace parallax;

TEST_CASE("the top 10 plans of every exporting stack export without refusal") {
  const ClusterSpec cluster = load_cluster("dgx-h100-superpod");
  const EfficiencyProfile profile = load_profile(cluster.profile);
  int64_t exported = 0;
  for (const std::string& name : preset_names("stacks")) {
    const StackSpec stack = load_stack(name);
    const Exporter e = stack.capabilities.exporter;
    if (e != Exporter::megatron && e != Exporter::deepspeed && e != Exporter::torchtitan) continue;
    const std::vector<const char*> models =
        e == Exporter::torchtitan ? std::vector<const char*>{"llama3-8b", "llama3-70b"}
                                  : std::vector<const char*>{"megatron-8.3b", "llama2-7b", "bloom-176b"};
    for (const char* model : models) {
      PlannerInputs in;
      in.model = load_model(model);
      in.cluster = cluster;
      in.gpus = 64;
      in.job.global_batch = 512;
      in.job.framework = name;
      apply_stack(stack, in.job);
      in.profile = profile;
      in.top_k = 0;
      in.threads = 2;
      const SearchResult r = search_plans(in);
      for (size_t i = 0; i < r.plans.size() && i < 10; ++i) {
        PlanFile f;
        f.model = in.model;
        f.cluster = in.cluster;
        f.job = in.job;
        f.gpus = in.gpus;
        f.plan = r.plans[i].plan;
        INFO(name << " " << model << " plan " << i << ": tp " << f.plan.tp << " pp " << f.plan.pp
                  << " zero " << f.plan.zero << " vpp " << f.plan.vpp);
        if (e == Exporter::megatron) {
          REQUIRE_NOTHROW(megatron_args(f));
          // Megatron-LM's own start-up rules (megatron_rules.hpp), with the SLURM script's
          // environment, on Hopper.
          const std::string script = slurm_megatron_script(f, LaunchOptions{});
          const bool one_queue = script.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos;
          const test::MegatronLaunch l{megatron_args(f), f.gpus,
                                       one_queue ? std::optional<std::string>(std::string(1, '1')) : std::nullopt, 9};
          const std::vector<std::string> broken = test::megatron_rule_violations(l);
          INFO((broken.empty() ? std::string() : broken.front()));
          CHECK(broken.empty());
        }
        if (e == Exporter::deepspeed) CHECK_NOTHROW(deepspeed_config(f));
        if (e == Exporter::torchtitan) CHECK_NOTHROW(torchtitan_toml(f, LaunchOptions{}));
        ++exported;
      }
    }
  }
  // Every exporting stack found plans for the GPT and Llama presets at least (TorchTitan for
  // both of its Llama 3 presets).
  CHECK(exported >= 6 * 2 * 10 + 2 * 10);
}
