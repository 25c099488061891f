#!/usr/bin/env bash
# compare.sh OLD [NEW]: outputs.sh's outputs of two parallax binaries, diffed; exit 0 when every
# one is byte for byte the same. OLD (and NEW) is a binary, or a git ref of this repository, which
# is checked out in build-golden/REF and its `parallax` built there (the commit before a
# refactoring, say). NEW defaults to build/parallax.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
binary() {  # binary OLD_OR_REF: a parallax binary's path
  if [ -x "$1" ] && [ -f "$1" ]; then echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; return; fi
  local ref="$1" dir
  git -C "$repo" rev-parse --verify -q "$ref^{commit}" >/dev/null || { echo "compare: $ref is neither a binary nor a git ref" >&2; exit 2; }
  dir="$repo/build-golden/$(git -C "$repo" rev-parse --short "$ref")"
  if [ ! -d "$dir/src" ]; then
    mkdir -p "$dir"
    git -C "$repo" worktree add --detach "$dir/src" "$ref" >&2
  fi
  cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DPARALLAX_TESTS=OFF -DPARALLAX_GUI=OFF >&2
  cmake --build "$dir/build" -j "$(nproc 2>/dev/null || echo 2)" --target parallax >&2
  echo "$dir/build/parallax"
}
old=$(binary "$1")
new=$(binary "${2:-$repo/build/parallax}")
work=$(mktemp -d "${TMPDIR:-/tmp}/parallax-golden.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$repo/tests/golden/outputs.sh" "$old" "$work/old"
"$repo/tests/golden/outputs.sh" "$new" "$work/new"
# The plan files name no binary; the outputs that print a path print the work folder's.
for side in old new; do
  grep -rl "$work/$side" "$work/$side" | xargs -r sed -i "s|$work/$side|OUT|g"
done
n=$(ls "$work/old" | wc -l)
if diff -r "$work/old" "$work/new" > "$work/diff.txt"; then
  echo "compare: $n outputs, every one the same ($old vs $new)"
else
  head -100 "$work/diff.txt"
  echo "compare: $(grep -c '^diff ' "$work/diff.txt") of $n outputs differ ($old vs $new)" >&2
  exit 1
fi
