#!/usr/bin/env bash
# outputs.sh PARALLAX OUT_DIR: every output a refactoring must leave byte for byte as it was
# (issue 61): plan, predict and simulate, text and JSON, for the README's default job and eleven
# others (dense, context parallel, mixture of experts, ZeRO-3, FSDP, uneven stages); each plan's
# simulated timeline and Chrome trace; every export of each job's plan, and the Megatron-LM export
# imported back; a recipe of every plan flag; the flags' help; the report as HTML, Markdown and
# JSON; validate and validate --cross-validate source, per row; the planner's sensitivity. What varies from run to run (the search's wall time) is blanked. compare.sh
# runs it for two binaries and diffs.
set -euo pipefail
[ $# -eq 2 ] || { echo "outputs: usage: outputs.sh PARALLAX OUT_DIR" >&2; exit 2; }
px="$1"
out="$2"
[ -x "$px" ] || { echo "outputs: PARALLAX $px is not an executable" >&2; exit 2; }
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || { echo "outputs: OUT_DIR $out is not empty: not overwriting it" >&2; exit 2; }
mkdir -p "$out"
# name | the job's flags | one plan's flags (for predict, simulate and the exports)
jobs=(
  "default||--tp 8 --pp 35 --gpus 2240"
  "gpt3-175b-1024|--model gpt3-175b --gpus 1024 --global-batch 1536|--tp 8 --pp 8 --mbs 1 --recompute selective --sp"
  "llama3-70b-h100|--model llama3-70b --cluster dgx-h100-superpod --gpus 512 --global-batch 1024 --stack megatron-core|--tp 8 --pp 4 --vpp 5 --recompute selective --sp --zero 1"
  "llama3.1-405b-cp|--model llama3.1-405b --seq-len 131072 --cluster dgx-h100-superpod --nodes 2048 --gpus 16384 --global-batch 1920 --stack megatron-core|--tp 8 --cp 16 --pp 2 --recompute full --sp --zero 1"
  "mixtral-8x7b|--model mixtral-8x7b --cluster dgx-h100-superpod --gpus 64 --global-batch 256 --stack megatron-core|--tp 2 --ep 8 --pp 1 --recompute selective --sp --zero 1"
  "deepseek-v3|--model deepseek-v3-shaped --seq-len 4096 --cluster dgx-h100-superpod --nodes 256 --gpus 2048 --global-batch 8192 --stack megatron-core --dtype fp8|--tp 1 --ep 32 --pp 1 --mbs 4 --recompute full --zero 1"
  "qwen3-30b-a3b|--model qwen3-30b-a3b --cluster dgx-h100-superpod --gpus 64 --global-batch 512 --stack megatron-core|--tp 1 --ep 8 --pp 1 --recompute selective --zero 1"
  "llama2-7b-zero3|--model llama2-7b --cluster dgx-a100-superpod --gpus 64 --global-batch 512 --stack deepspeed|--tp 1 --pp 1 --zero 3 --recompute full --mbs 2"
  "llama3-8b-fsdp|--model llama3-8b --cluster dgx-h100-superpod --gpus 64 --global-batch 512 --stack torchtitan|--tp 1 --pp 1 --zero 3 --recompute selective --mbs 1"
  "gpt3-175b-uneven|--model gpt3-175b --gpus 1792 --global-batch 1536 --uneven-pp|--tp 8 --pp 7 --first-stage-layers 13 --last-stage-layers 13 --recompute selective --sp"
  "megatron-8.3b-v100|--model megatron-8.3b --cluster v100-dgx2h --gpus 512 --global-batch 512 --dtype fp16|--tp 8 --pp 1 --recompute full"
  "mt-nlg-530b-nemo|--model mt-nlg-530b --gpus 2240 --stack nemo|--tp 8 --pp 35 --recompute selective --sp --zero 1"
)
blank() { sed -E 's|^Usage: [^ ]*parallax|Usage: parallax|; s/in [0-9]+\.[0-9]+ s;/in (time) s;/; s/"search_time_s": [0-9.e+-]+/"search_time_s": 0/'; }
run() {  # run FILE CMD...: stdout and stderr to FILE, the exit code last
  local f="$1"; shift
  set +e
  "$@" > "$out/$f" 2>&1
  local rc=$?
  set -e
  blank < "$out/$f" > "$out/$f.b" && mv "$out/$f.b" "$out/$f"
  echo "exit $rc" >> "$out/$f"
}
for j in "${jobs[@]}"; do
  IFS='|' read -r name job plan <<<"$j"
  # shellcheck disable=SC2086
  {
    planjob=${job/--uneven-pp/}
    run "$name.plan.txt" "$px" plan $job
    run "$name.plan.json" "$px" plan $job --json
    run "$name.predict.txt" "$px" predict $planjob $plan
    run "$name.predict.json" "$px" predict $planjob $plan --json
    run "$name.plan-file.out" "$px" predict $planjob $plan --out "$out/$name.planfile.json"
    run "$name.simulate.txt" "$px" simulate $planjob $plan
    run "$name.simulate.json" "$px" simulate $planjob $plan --json
    run "$name.simulate-timeline.txt" "$px" simulate $planjob $plan --timeline --trace "$out/$name.trace.json"
    for f in megatron deepspeed slurm mpirun megatron-deepspeed; do
      run "$name.export-$f.txt" "$px" export --plan "$out/$name.planfile.json" --format "$f"
    done
    # The Megatron-LM importer, on the export (the job's cluster and GPUs still given).
    cluster=$(sed -nE 's/.*--cluster ([^ ]+).*/\1/p' <<<"$planjob")
    gpus=$(sed -nE 's/.*--gpus ([^ ]+).*/\1/p' <<<"$planjob $plan")
    stack=$(sed -nE 's/.*--stack ([^ ]+).*/\1/p' <<<"$planjob")
    nodes=$(sed -nE 's/.*--nodes ([^ ]+).*/\1/p' <<<"$planjob")
    dtype=$(sed -nE 's/.*--dtype ([^ ]+).*/\1/p' <<<"$planjob")
    run "$name.import-megatron.json" "$px" predict --from-megatron-args "$out/$name.export-megatron.txt" \
      ${cluster:+--cluster $cluster} ${nodes:+--nodes $nodes} ${gpus:+--gpus $gpus} ${stack:+--stack $stack} \
      ${dtype:+--dtype $dtype} --json
  }
done
# A recipe with every plan flag (the recipe reader and the flags' resolution), and the flags' help.
cat > "$out/recipe.yaml" <<'YAML'
model: llama3-70b
cluster: dgx-h100-superpod
gpus: 512
global_batch: 1024
stack: megatron-core
tp: 4
pp: 4
cp: 2
vpp: 5
microbatch_group: 8
mbs: 1
sp: true
recompute: full
recompute_layers: 10
zero: 1
order: tp-cp-dp-pp
YAML
run "recipe.predict.json" "$px" predict --from-recipe "$out/recipe.yaml" --json
run "recipe-bad.txt" "$px" predict --from-recipe "$out/recipe.yaml" --etp -1
for c in plan predict simulate capacity; do
  run "help-$c.txt" "$px" "$c" --help
done
run "default.sensitivity.txt" "$px" plan --sensitivity
run "llama3-70b-h100.sensitivity.txt" "$px" plan --model llama3-70b --cluster dgx-h100-superpod --gpus 512 --global-batch 1024 --stack megatron-core --sensitivity
for f in html md json; do
  run "report.$f" "$px" report --format "$f"
done
run "validate.txt" "$px" validate
run "validate.json" "$px" validate --json
run "cross-validate.txt" "$px" validate --cross-validate source
