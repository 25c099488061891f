#!/usr/bin/env bash
# Closed-loop check of the cost model on this machine (issue 7; a measurement, not a test):
#  1. `parallax calibrate --backend cpu` fits a profile from microbenchmarks alone;
#  2. the executor runs 10 plans of gpt-tiny and gpt-25m (tp/pp/dp, micro-batch, recompute,
#     schedule; at most as many ranks as cores, one thread per rank);
#  3. `parallax compare` prints predicted vs measured for every plan with the microbenchmark
#     profile;
#  4. leave-some-out: `calibrate --from` the measurements of some plans only (A: 01, 07, 08;
#     B: 02, 08, 10), and `compare` again on the other plans.
# Usage: bench/calibration/closed_loop.sh [workdir]   (run it on an idle machine)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
px="$here/../../build/parallax"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
steps="${STEPS:-6}"
# Each rank bound to a core, as `calibrate` runs its microbenchmarks (Open MPI's default for
# np <= 2): unbound 2-rank runs of the same plan varied by up to 30% from run to run here.
mpirun=(mpirun --bind-to core)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)

echo "== 1. microbenchmark profile" >&2
"$px" calibrate --backend cpu --out "$work/micro.json" --name cpu-local-micro

# name | model | flags for parallax predict
plans=(
  "01|gpt-tiny|--gpus 1 --tp 1 --pp 1 --mbs 2 --recompute none"
  "02|gpt-tiny|--gpus 2 --tp 2 --pp 1 --mbs 4 --recompute none"
  "03|gpt-tiny|--gpus 2 --tp 1 --pp 2 --mbs 1 --schedule 1f1b --recompute none"
  "04|gpt-tiny|--gpus 2 --tp 1 --pp 1 --mbs 2 --zero 0 --recompute none"
  "05|gpt-tiny|--gpus 1 --tp 1 --pp 1 --mbs 4 --recompute full"
  "06|gpt-tiny|--gpus 2 --tp 1 --pp 2 --vpp 2 --mbs 1 --schedule interleaved --recompute none"
  "07|gpt-25m|--gpus 1 --tp 1 --pp 1 --mbs 2 --recompute selective"
  "08|gpt-25m|--gpus 2 --tp 2 --pp 1 --mbs 2 --sp --recompute none"
  "09|gpt-25m|--gpus 2 --tp 1 --pp 2 --mbs 2 --schedule gpipe --recompute none"
  "10|gpt-25m|--gpus 2 --tp 1 --pp 1 --mbs 4 --zero 1 --recompute none"
  "11|gpt-25m|--gpus 2 --tp 2 --pp 1 --mbs 1 --recompute full"
)
echo "== 2. executor runs" >&2
all=()
for p in "${plans[@]}"; do
  IFS='|' read -r id model flags <<<"$p"
  # shellcheck disable=SC2086
  "$px" predict --model "$model" --cluster cpu-local --dtype fp32 --framework parallax-executor \
    --global-batch 8 $flags --out "$work/plan$id.json" --profile "$work/micro.json" > /dev/null
  np=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['plan']; print(p['tp']*p['pp']*p['dp'])" "$work/plan$id.json")
  echo "plan $id: $model $flags (np $np)" >&2
  "${mpirun[@]}" -np "$np" "$px" run --plan "$work/plan$id.json" --steps "$steps" --threads 1 \
    --quiet --out "$work/m$id.json"
  all+=("$work/m$id.json")
done

echo "== 3. compare, microbenchmark profile only" >&2
"$px" compare --profile "$work/micro.json" --measurements "${all[@]}" --out "$work/compare-micro.json"

# Two held-in sets: A includes single-rank runs (plans 01, 07), which run each kernel with the
# other core idle, faster than the microbenchmarks (all ranks busy) and the 2-rank plans; B holds
# 2-rank runs only, as the profile was measured.
leave_some_out() {  # label, held-in plan ids...
  local label=$1; shift
  local from=() others=() f id keep
  for id in "$@"; do from+=(--from "$work/m$id.json"); done
  echo "== 4$label. leave-some-out: refit from plans $*; compare on the others" >&2
  "$px" calibrate "${from[@]}" --profile "$work/micro.json" --out "$work/refit$label.json" \
    --name "cpu-local-refit-$label" > /dev/null
  for f in "${all[@]}"; do
    keep=1
    for id in "$@"; do case "$f" in *"m$id.json") keep=0 ;; esac; done
    [ $keep = 1 ] && others+=("$f")
  done
  "$px" compare --profile "$work/micro.json" --measurements "${others[@]}" --json --out "$work/others$label-micro.json" > /dev/null
  "$px" compare --profile "$work/refit$label.json" --measurements "${others[@]}" --json --out "$work/others$label-refit.json" > /dev/null
  python3 - "$work" "$label" "$*" <<'PY'
import json, sys
w, label, held = sys.argv[1], sys.argv[2], sys.argv[3]
a = json.load(open(f"{w}/others{label}-micro.json")); b = json.load(open(f"{w}/others{label}-refit.json"))
print(f"\nleave-some-out {label}: refit from plans {held}; held-out plans, iteration time error")
print(f"{'plan':58s} {'micro':>8s} {'refit':>8s}")
for ra, rb in zip(a["runs"], b["runs"]):
    ea = [r["error"] for r in ra["rows"] if r["kind"] == "iteration"][0]
    eb = [r["error"] for r in rb["rows"] if r["kind"] == "iteration"][0]
    print(f"{ra['plan']:58s} {100*ea:+7.1f}% {100*eb:+7.1f}%")
print(f"median |error|: micro {100*a['median_abs_iteration_error']:.1f}%  refit {100*b['median_abs_iteration_error']:.1f}%")
print(f"max |error|:    micro {100*a['max_abs_iteration_error']:.1f}%  refit {100*b['max_abs_iteration_error']:.1f}%")
PY
}
leave_some_out A 01 07 08
leave_some_out B 02 08 10
echo "work dir: $work" >&2
