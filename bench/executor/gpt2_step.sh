#!/usr/bin/env bash
# Executor speed benchmark (issue 6; a benchmark, not a test): one process trains gpt2-124m
# (B=4, T=64, fp32) for a few steps and reports the mean step time (first step excluded) and its
# FLOP/s as a fraction of the sgemm peak measured in the same run (1024^3 sgemm, same threads).
# Usage: bench/executor/gpt2_step.sh [steps] [out.json]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
steps="${1:-4}"
out="${2:-gpt2_step_measurements.json}"
plan="$(mktemp --suffix=.json)"
"$root/build/parallax" predict --model "$here/gpt2-124m-t64.json" --cluster dgx-a100-superpod \
  --dtype fp32 --gpus 1 --tp 1 --pp 1 --global-batch 4 --mbs 4 --recompute none \
  --out "$plan" > /dev/null
"$root/build/parallax" run --plan "$plan" --steps "$steps" --gemm-peak --out "$out"
rm -f "$plan"
