// The CLI11 side of the job / plan / search flags: which flag fills which field of PlanOptions and
// SearchFlags. Their resolution into validated specs lives in parallax::inputs, shared with the GUI
// so that both report bad input with the same message.
#include "plan_options.hpp"

#include "parallax/inputs/recipe.hpp"

namespace parallax::cli {

void add_job_options(CLI::App& app, PlanOptions& o, bool with_gpus) {
  app.add_option("--model", o.model, "model preset name or JSON file")->capture_default_str();
  app.add_option("--cluster", o.cluster, "cluster preset name or JSON file")->capture_default_str();
  app.add_option("--nodes", o.nodes,
                 "the cluster at this many nodes (up to what its fabric joins; default: its own)");
  if (with_gpus) {
    app.add_option("--gpus", o.gpus, "GPUs used (tp * cp * pp * dp)")->capture_default_str();
  }
  app.add_option("--global-batch", o.global_batch, "sequences per iteration")->capture_default_str();
  app.add_option("--seq-len", o.seq_len, "tokens per sequence (default: the model's)");
  app.add_option("--dtype", o.dtype, "training dtype: fp32|tf32|bf16|fp16|fp8")->capture_default_str();
  app.add_option("--bytes-per-param", o.bytes_per_param,
                 "weights+grads+optimizer bytes per parameter: 16|18|20")
      ->capture_default_str();
  app.add_option("--stack,--framework", o.framework,
                 "software stack: presets/stacks/ says how it computes attention, the profile holds "
                 "its scale (default: the profile's, megatron-lm on the GPU profiles)");
  app.add_option("--attention-kernel", o.attention_kernel,
                 "fused attention kernel (presets/attention/: flash-attention-2, flash-attention-3, "
                 "cudnn, triton-flash) or JSON file; default: the stack's for the GPU");
  app.add_option("--attention", o.attention,
                 "the attention core, overriding the stack's: fused (blocked, no s x s scores; the "
                 "executor's CPU backend runs its own blocked kernel) or unfused");
  app.add_option("--tokens", o.tokens, "total training tokens");
  app.add_option("--price", o.price, "price per GPU-hour (USD)");
  app.add_option("--profile", o.profile, "efficiency profile preset or JSON file (default: the cluster's)");
}

void add_plan_options(CLI::App& app, PlanOptions& o) {
  add_job_options(app, o);
  app.add_option("--tp", o.tp, "tensor-parallel size")->capture_default_str();
  app.add_option("--pp", o.pp, "pipeline-parallel size")->capture_default_str();
  app.add_option("--cp", o.cp, "context-parallel size (the sequence split over cp ranks)")
      ->capture_default_str();
  app.add_option("--ep", o.ep, "expert-parallel size (mixture-of-experts models: experts split over ep ranks)")
      ->capture_default_str();
  app.add_option("--etp", o.etp, "expert tensor-parallel size (0: tp, Megatron-Core's default)")
      ->capture_default_str();
  app.add_option("--moe-dispatcher", o.moe_dispatcher,
                 "MoE token dispatcher: alltoall (one copy per chosen expert, NCCL all-to-all) or the "
                 "flex dispatcher's deepep / hybridep (one copy per node, then per rank)")
      ->capture_default_str();
  // The defaults of --gpus, --tp, --pp and --global-batch are MT-NLG 530B's published plan, the
  // default model's; another --model takes the whole cluster, tp 1, pp 1 and one micro-batch per
  // data-parallel rank for the ones left out.
  CLI::App* sub = &app;
  app.parse_complete_callback([sub, &o] {
    if (sub->count("--model") == 0 || o.model == PlanOptions{}.model) return;
    if (sub->count("--gpus") == 0) o.gpus.clear();
    if (sub->count("--tp") == 0) o.tp = "1";
    if (sub->count("--pp") == 0) o.pp = "1";
    if (sub->count("--global-batch") == 0) o.global_batch.clear();
  });
  app.add_option("--vpp", o.vpp, "virtual stages per pipeline rank (interleaved 1F1B)")
      ->capture_default_str();
  app.add_option("--microbatch-group", o.microbatch_group,
                 "interleaved: micro-batches per virtual-stage group, pp <= N <= m, m % N zero or "
                 ">= pp (0 = pp; Megatron-Core --microbatch-group-size-per-virtual-pipeline-stage)")
      ->capture_default_str();
  app.add_option("--mbs", o.mbs, "micro-batch size")->capture_default_str();
  app.add_flag("--sp", o.sp, "sequence parallelism (needs tp > 1)");
  app.add_option("--recompute", o.recompute, "activation recomputation: none|selective|full")
      ->capture_default_str();
  app.add_option("--recompute-layers", o.recompute_layers,
                 "with full recompute: layers per stage recomputed (0 = all)")
      ->capture_default_str();
  app.add_option("--zero", o.zero, "ZeRO stage 0-3 (1 = distributed optimizer)")
      ->capture_default_str();
  app.add_option("--first-stage-layers", o.first_stage_layers,
                 "layers on the first pipeline stage (0 = the even share; Megatron-LM "
                 "--decoder-first-pipeline-num-layers)")
      ->capture_default_str();
  app.add_option("--last-stage-layers", o.last_stage_layers,
                 "layers on the last pipeline stage (0 = the even share)")
      ->capture_default_str();
  app.add_flag("--account-for-embedding-in-pipeline-split", o.embedding_in_split,
               "the embedding counts as a layer of the pipeline split: the first (virtual) stage "
               "runs one layer fewer (Megatron-Core's flag of the same name)");
  app.add_flag("--account-for-loss-in-pipeline-split", o.loss_in_split,
               "the loss counts as a layer of the pipeline split: the last (virtual) stage runs one "
               "layer fewer (Megatron-Core's flag of the same name)");
  app.add_option("--schedule", o.schedule, "gpipe|1f1b|interleaved (default 1f1b; interleaved when vpp > 1)");
  app.add_option("--order", o.order, "rank placement order, innermost first")->capture_default_str();
}

std::set<std::string> typed_recipe_keys(const CLI::App& app) {
  std::set<std::string> keys;
  for (const CLI::Option* opt : app.get_options())
    if (opt->count() > 0) keys.insert(recipe_key(opt->get_name()));
  return keys;
}

}  // namespace parallax::cli
