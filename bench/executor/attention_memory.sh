#!/usr/bin/env bash
# Attention activation memory against sequence length (issue 26; a benchmark, not a test): one
# process trains a model of gpt2-124m's shapes (hidden 768, 12 heads, vocab 50257; 2 layers, so
# that a step at seq 8192 takes about a minute on 2 cores) for one step at three sequence lengths,
# with the fused (blocked, online-softmax) attention kernel and with the unfused one, and reads
# the measured peak resident bytes from measurements.json.
#
# With memory linear in the sequence the increment from s to 2s doubles from one doubling to the
# next (ratio 2); the unfused kernel's (B, NH, T, T) probabilities make it tend to 4. Prints one
# row per run and the ratio per kernel.
# Usage: bench/executor/attention_memory.sh [fused seqs (default "2048 4096 8192")] [unfused seqs (default "1024 2048 4096")]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
bin="${PARALLAX_BIN:-$root/build/parallax}"  # PARALLAX_BIN: another build
fused_seqs="${1:-2048 4096 8192}"
unfused_seqs="${2:-1024 2048 4096}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

peak_of() {  # attention seq -> peak resident bytes
  local attention=$1 seq=$2
  cat > "$work/model.json" <<JSON
{"name": "gpt2-124m-shapes-2l-s$seq",
 "source": "gpt2-124m's shapes (Radford et al. 2019; Hugging Face gpt2 config.json) with 2 layers and seq_len $seq: bench/executor/attention_memory.sh",
 "layers": 2, "hidden": 768, "heads": 12, "ffn_hidden": 3072, "seq_len": $seq, "vocab": 50257,
 "activation": "gelu", "position": "learned", "tied_embeddings": true, "norm": "layernorm"}
JSON
  "$bin" predict --model "$work/model.json" --cluster cpu-local --stack parallax-executor \
    --attention "$attention" --dtype fp32 --gpus 1 --tp 1 --pp 1 --global-batch 1 --mbs 1 \
    --recompute none --out "$work/plan.json" > /dev/null
  "$bin" run --quiet --plan "$work/plan.json" --steps 1 --out "$work/m.json" > "$work/run.log" 2>&1 ||
    { cat "$work/run.log" >&2; exit 1; }
  python3 -c 'import json,sys; print(max(int(r["peak_resident_bytes"]) for r in json.load(open(sys.argv[1]))["ranks"]))' "$work/m.json"
}

printf '%-8s %6s %18s\n' attention seq peak_resident_MiB
for attention in fused unfused; do
  seqs=$fused_seqs
  [ "$attention" = unfused ] && seqs=$unfused_seqs
  peaks=()
  for s in $seqs; do
    p=$(peak_of "$attention" "$s")
    peaks+=("$p")
    printf '%-8s %6s %18.1f\n' "$attention" "$s" "$(awk -v b="$p" 'BEGIN { print b / 1048576 }')"
  done
  awk -v a="${peaks[0]}" -v b="${peaks[1]}" -v c="${peaks[2]}" -v k="$attention" \
    'BEGIN { printf "%s: increment ratio (peak3 - peak2) / (peak2 - peak1) = %.2f (linear 2, quadratic 4)\n", k, (c - b) / (b - a) }'
done
