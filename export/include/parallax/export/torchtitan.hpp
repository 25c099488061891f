#pragma once
// TorchTitan launches (pytorch/torchtitan v0.2.2, the last release that reads TOML job configs:
// `python -m torchtitan.train --job.config_file FILE`; its main branch since
// pytorch/torchtitan#2386 of 2026-02 takes Python configurations, --module/--config, instead). The
// job config's sections and fields are torchtitan/config/job_config.py's; the model is one of
// torchtitan/models/llama3's flavors, chosen by shape.
#include <string>

#include "parallax/core/plan_file.hpp"
#include "parallax/export/launchers.hpp"

namespace parallax {

// The TOML job config: [job], [model] (llama3 and the flavor whose shape is the plan's model),
// [optimizer] and [lr_scheduler] (placeholders), [training] (batch, sequence, steps, dataset,
// mixed precision), [parallelism] (degrees, FSDP resharding, pipeline schedule and split),
// [activation_checkpoint], [compile], [quantize.linear.float8] (fp8 jobs), [metrics] and
// [checkpoint]. Steps: o.benchmark_iters when > 0 (then every step is logged), else the job's
// tokens over global batch x sequence, rounded up, else 100 (a measurement run). Throws
// InputError("export", "--format torchtitan", reason) for what TorchTitan cannot run as planned:
// what its stack's capability table refuses (presets/stacks/torchtitan.json: MoE, positions other
// than RoPE, ZeRO-1, micro-batch groups, DDP beside other parallelism, ...), a model no llama3
// flavor has the shape of, precisions other than bf16, fp32 and fp8, and a rank order other than
// tp-cp-dp-pp. TP without sequence parallelism is written with a note: TorchTitan's TP always
// shards the sequence.
std::string torchtitan_toml(const PlanFile& f, const LaunchOptions& o);

// A bash script that writes the TOML beside itself (under SLURM: in the submit directory) and runs
// `torchrun ... -m torchtitan.train --job.config_file FILE` from $TORCHTITAN_DIR (default
// /opt/torchtitan): one torchrun on one host, or one per host under srun with a c10d rendezvous.
std::string torchtitan_script(const PlanFile& f, const LaunchOptions& o);

}  // namespace parallax
