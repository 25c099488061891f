#pragma once
// Megatron-LM's own start-up rules for a pretrain_gpt.py command line, restated so CI (which cannot
// fetch Megatron-LM) holds every export to them. Each rule cites the line that asserts it in
// NVIDIA/Megatron-LM main d98e8a64ddf3 (2026-08-22): megatron/training/arguments.py unless
// another file is named. scripts/check_megatron_args.py runs the real code by hand; every rule
// here was seen to fire there on a command line that breaks it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax::test {

struct MegatronLaunch {
  std::vector<std::string> args;
  int64_t world_size = 0;
  std::optional<std::string> cuda_device_max_connections;  // unset when empty
  int sm_major = 9;                                        // compute capability of the GPUs
};

// Flags with their value ("" for switches). A word after a flag that is not itself a flag is its
// value; the exports never write negative numbers.
inline std::map<std::string, std::string> megatron_flags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--", 0) != 0) continue;
    const bool has_value = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
    out[args[i]] = has_value ? args[i + 1] : "";
    if (has_value) ++i;
  }
  return out;
}

// The rules the launch breaks, each as "file:line: what"; empty when Megatron would start.
inline std::vector<std::string> megatron_rule_violations(const MegatronLaunch& l) {
  const std::map<std::string, std::string> f = megatron_flags(l.args);
  auto has = [&](const char* k) { return f.count(k) == 1; };
  auto num = [&](const char* k, int64_t fallback) {
    return has(k) && !f.at(k).empty() ? std::stoll(f.at(k)) : fallback;
  };
  std::vector<std::string> bad;
  auto rule = [&](bool ok, const std::string& where_what) {
    if (!ok) bad.push_back(where_what);
  };
  const int64_t tp = num("--tensor-model-parallel-size", 1), pp = num("--pipeline-model-parallel-size", 1);
  const int64_t cp = num("--context-parallel-size", 1), layers = num("--num-layers", 0);
  const int64_t heads = num("--num-attention-heads", 0), mbs = num("--micro-batch-size", 1);
  const int64_t gbs = num("--global-batch-size", 0);
  const bool fsdp = has("--use-megatron-fsdp"), dist_opt = has("--use-distributed-optimizer");

  rule(l.world_size % (tp * pp * cp) == 0, "arguments.py:432: world size % (tp * pp * cp) == 0");
  const int64_t dp = l.world_size / (tp * pp * cp);
  rule(dp > 0 && gbs % (mbs * dp) == 0, "arguments.py:715: global batch % (micro batch * dp) == 0");

  // Pipeline split and virtual stages.
  const int vpp_flags = has("--num-layers-per-virtual-pipeline-stage") +
                        has("--num-virtual-stages-per-pipeline-rank") +
                        has("--pipeline-model-parallel-layout");
  rule(vpp_flags <= 1, "arguments.py:928: one way of giving virtual stages at most");
  const bool uneven = has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers");
  int64_t vpp = num("--num-virtual-stages-per-pipeline-rank", 1);
  if (has("--num-layers-per-virtual-pipeline-stage")) {
    const int64_t per_virtual = num("--num-layers-per-virtual-pipeline-stage", 1);
    rule(!uneven, "arguments.py:955: --num-layers-per-virtual-pipeline-stage without uneven stages");
    rule(layers % pp == 0, "arguments.py:968: layers % pp == 0");
    rule(pp > 0 && (layers / pp) % per_virtual == 0, "arguments.py:972: (layers / pp) % layers per virtual stage == 0");
    vpp = per_virtual > 0 ? layers / pp / per_virtual : 1;
  } else if (!uneven) {
    rule(layers % pp == 0, "arguments.py:997: layers % pp == 0");
  } else {
    const int64_t first = num("--decoder-first-pipeline-num-layers", 0);
    const int64_t last = num("--decoder-last-pipeline-num-layers", 0);
    const int64_t middle_stages = pp - (first > 0) - (last > 0), middle = layers - first - last;
    rule(middle_stages > 0 ? middle > 0 && middle % middle_stages == 0 : middle == 0,
         "core/transformer/transformer_config.py:2339/2350: the middle stages split the rest evenly");
  }
  if (vpp > 1) {
    rule(has("--no-overlap-p2p-communication") ? pp > 2 : pp > 1,
         "arguments.py:1002/1006: interleaving needs pp > 1, and pp > 2 without p2p overlap");
    // core/model_parallel_config.py:567: the group defaults to pp; schedules.py:1160 and :1173.
    const int64_t m = dp > 0 && mbs > 0 ? gbs / (mbs * dp) : 0;
    const int64_t group = num("--microbatch-group-size-per-virtual-pipeline-stage", pp);
    rule(group >= pp && group <= m, "core/pipeline_parallel/schedules.py:1160: pp <= micro-batch group <= m");
    rule(group > 0 && (m % group == 0 || m % group >= pp),
         "core/pipeline_parallel/schedules.py:1173: m % micro-batch group is 0 or >= pp");
  }

  // Overlaps.
  if (has("--overlap-param-gather")) {
    rule(dist_opt || fsdp, "arguments.py:1024: --overlap-param-gather needs the distributed optimizer or FSDP");
    rule(has("--overlap-grad-reduce"), "arguments.py:1029: --overlap-param-gather needs --overlap-grad-reduce");
  }
  if (has("--tp-comm-overlap"))
    rule(has("--sequence-parallel"), "arguments.py:1442: --tp-comm-overlap needs --sequence-parallel");

  // Megatron FSDP, and the hardware queue the TP all-reduces need before Blackwell.
  if (fsdp) {
    rule(!(num("--megatron-fsdp-version", 1) == 2 && dist_opt),
         "arguments.py:1125: FSDP v2 refuses --use-distributed-optimizer");
    rule(l.cuda_device_max_connections != "1", "arguments.py:1166: FSDP needs CUDA_DEVICE_MAX_CONNECTIONS != 1");
    rule(has("--ckpt-format") && f.at("--ckpt-format") == "fsdp_dtensor",
         "arguments.py:1169: FSDP needs --ckpt-format fsdp_dtensor");
  } else {
    rule(!(has("--ckpt-format") && f.at("--ckpt-format") == "fsdp_dtensor"),
         "arguments.py:1676: --ckpt-format fsdp_dtensor only with Megatron FSDP");
    if ((tp > 1 || cp > 1) && l.sm_major < 10)
      rule(l.cuda_device_max_connections == "1",
           "arguments.py:1477: tp or cp > 1 before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1");
  }
  if (has("--fp8-param-gather"))
    rule(dist_opt || fsdp, "arguments.py:1096: --fp8-param-gather needs the distributed optimizer or FSDP");

  // Precision, recompute, shape, data.
  rule(!(has("--fp16") && has("--bf16")), "arguments.py:1196/1205: --fp16 and --bf16 exclude each other");
  if (has("--recompute-granularity")) {
    if (f.at("--recompute-granularity") == "selective")
      rule(!has("--recompute-method"), "arguments.py:1426: selective recompute takes no --recompute-method");
    else
      rule(has("--recompute-method") && has("--recompute-num-layers"),
           "core/transformer/transformer_config.py:1914/1919: full recompute needs a method and a layer count");
  }
  rule(num("--max-position-embeddings", 0) >= num("--seq-length", 0),
       "arguments.py:1353: max_position_embeddings >= seq_length");
  rule(heads > 0 && heads % tp == 0, "core/transformer/transformer_config.py:1447: heads % tp == 0");
  if (has("--group-query-attention"))
    rule(num("--num-query-groups", 1) % tp == 0,
         "core/transformer/transformer_config.py:1462: query groups % tp == 0");
  rule(has("--mock-data") != has("--data-path"), "arguments.py:1679: exactly one data source");
  if (has("--lr") && has("--min-lr"))
    rule(std::stod(f.at("--min-lr")) <= std::stod(f.at("--lr")), "arguments.py:1360: min_lr <= lr");
  return bad;
}

}  // namespace parallax::test
