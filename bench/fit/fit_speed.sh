#!/usr/bin/env bash
# Speed of `parallax fit` and `parallax validate --cross-validate source` (issue 59): the same
# commands with two binaries in one run, taking turns, so that the ratio is measured on one
# machine state. The baseline is a parallax built before fits cached each row's op lists (commit
# 8479b7b), or any other; each command's output must be byte for byte the same with both
# binaries, or the script fails (a faster fit that fits something else is no speed-up).
#
# Usage: bench/fit/fit_speed.sh OLD_PARALLAX [NEW_PARALLAX] [ROUNDS]
#   NEW_PARALLAX defaults to build/parallax; ROUNDS (default 1) runs of each command and binary,
#   the fastest kept. A baseline binary of commit C:
#     git worktree add /tmp/base C && cmake -S /tmp/base -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release \
#       -DPARALLAX_TESTS=OFF -DPARALLAX_GUI=OFF && cmake --build /tmp/base/build -j 2 --target parallax
# Prints one line per command: old and new seconds and old / new.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../.."
old="${1:?usage: fit_speed.sh OLD_PARALLAX [NEW_PARALLAX] [ROUNDS]}"
new="${2:-$src/build/parallax}"
rounds="${3:-1}"
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "fit_speed: $b is not an executable" >&2; exit 2; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# seconds CMD...: wall seconds of one run (standard output to $work/out).
seconds() {
  local s e
  s=$(date +%s.%N)
  "$@" > "$work/out"
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }'
}

faster() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a < b) ? a : b }'; }

# bench NAME ARGS...: the command with each binary, fastest of ROUNDS. ARGS may name the output
# file as @OUT. Outputs (standard output and the file) compared.
bench() {
  local name=$1
  shift
  local best_old="" best_new="" t bin tag
  for ((r = 0; r < rounds; ++r)); do
    for tag in old new; do
      if [ "$tag" = old ]; then bin=$old; else bin=$new; fi
      # One output path for both (the fit prints it): each binary's file moved aside after.
      t=$(seconds "$bin" "${@//@OUT/$work/run.file}")
      cp "$work/out" "$work/$tag.out"
      if [ -f "$work/run.file" ]; then mv "$work/run.file" "$work/$tag.file"; fi
      if [ "$tag" = old ]; then best_old=$(faster "$t" "$best_old"); else best_new=$(faster "$t" "$best_new"); fi
    done
  done
  if ! cmp -s "$work/old.out" "$work/new.out" ||
     { [ -f "$work/old.file" ] && ! cmp -s "$work/old.file" "$work/new.file"; }; then
    echo "fit_speed: $name: the two binaries' outputs differ" >&2
    exit 1
  fi
  rm -f "$work/old.file" "$work/new.file"
  printf '%-34s old %8.2f s  new %7.2f s  %6.1fx\n' "$name" "$best_old" "$best_new" \
    "$(awk -v a="$best_old" -v b="$best_new" 'BEGIN { print a / b }')"
}

cd "$src"
runs=validation/runs
for p in h100-megatron a100-megatron v100-megatron; do
  date=$(sed -n 's/.*"date": *"\([^"]*\)".*/\1/p' "presets/profiles/$p.json" | head -1)
  bench "fit --profile $p" fit --profile "$p" --date "$date" --runs "$runs" --out @OUT
done
bench "validate --cross-validate source" validate --json --cross-validate source
