#!/usr/bin/env bash
# check_kit.sh SOURCE_DIR BUILD_DIR: scripts/gpu-kit packs BUILD_DIR's programs into a kit, and
# the kit's run-gpu-checks runs in a mount namespace (unshare -m) where every Debian file the
# kit claims to carry (MANIFEST.tsv: its libraries, Open MPI's and PMIx's components, help files
# and configuration, mpirun) is hidden, as on a node without those packages. It must
#   - resolve every program's and component's libraries inside the kit or from the node's base
#     (glibc, the C++ runtime, the NVIDIA driver, the CUDA runtime, cuBLAS, NCCL);
#   - train gpt-tiny on two CPU ranks with the kit's mpirun;
#   - stop where it looks for a CUDA device, with its one line "no CUDA device (...)" and exit 2.
set -euo pipefail
src="$1"
build="$2"
fail() { echo "check_kit: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root for unshare -m (CI and this machine run as root)"
work=$(mktemp -d "${TMPDIR:-/tmp}/parallax-kit-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
kit="$work/kit"
"$src/scripts/gpu-kit" --build-dir "$build" "$kit"

size_kib=$(du -sk "$kit" | cut -f1)
[ "$size_kib" -le $((60 * 1024)) ] || fail "the kit is $size_kib KiB, over 60 MiB"

# The Debian files the kit carries, hidden: a file under /dev/null, a directory under an empty tmpfs.
hide="$work/hide.sh"
{
  echo 'set -e'
  echo 'mount --make-rprivate /'
  for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi /etc/openmpi; do
    [ -d "$d" ] && echo "mount -t tmpfs none '$d'"
  done
  tail -n +2 "$kit/MANIFEST.tsv" | cut -f2 | grep '^/' | grep -v -E '^/usr/lib/x86_64-linux-gnu/(openmpi|pmix2)/|^/usr/share/openmpi/|^/etc/openmpi/' |
    sort -u | while read -r f; do
      [ -f "$f" ] && echo "mount --bind /dev/null '$f'"
    done
  echo 'exec "$@"'
} > "$hide"
hidden=$(grep -c 'mount --bind' "$hide")
[ "$hidden" -ge 10 ] || fail "only $hidden files to hide: MANIFEST.tsv does not list the carried libraries"

# Proof the hiding works: Debian's own mpirun cannot start in the namespace.
if unshare -m bash "$hide" /usr/bin/orterun --version > "$work/debian-mpirun.log" 2>&1; then
  fail "Debian's mpirun still runs in the namespace: the libraries are not hidden"
fi

set +e
unshare -m bash "$hide" "$kit/run-gpu-checks" "$work/results" > "$work/stdout" 2> "$work/stderr"
rc=$?
set -e
echo "--- run-gpu-checks in the namespace (exit $rc):"
cat "$work/stdout" "$work/stderr"
[ "$rc" -eq 2 ] || fail "run-gpu-checks exited $rc, not 2"
last=$(tail -1 "$work/stderr")
[[ "$last" == "run-gpu-checks: no CUDA device ("*")" ]] || fail "its last line is not the no-device stop: $last"
[ "$(wc -l < "$work/stderr")" -eq 1 ] || fail "it said more than one line on stderr"
grep -q '^cpu .*ran$' "$work/stdout" || fail "it did not train gpt-tiny on 2 CPU ranks first"

# Every library of every program and component: in the kit (or its unpacked compressed ones),
# or the node's base.
base_re='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so|libnvidia-)'
tsv="$work/results/libraries.tsv"
[ -s "$tsv" ] || fail "no libraries.tsv"
bad=$(awk -F'\t' -v kit="$kit/" -v base="$base_re" '
  index($3, kit) == 1 { next }
  $3 ~ /\/parallax-gpu-kit\.[A-Za-z0-9]+\// { next }
  $2 ~ base { next }
  { print $1 " -> " $2 " from " $3 }' "$tsv")
[ -z "$bad" ] || fail "resolved outside the kit and the base set: $bad"
programs=$(cut -f1 "$tsv" | sort -u | wc -l)
echo "check_kit: $(awk "BEGIN {printf \"%.1f\", $size_kib / 1024}") MiB; $hidden Debian files hidden;" \
  "$(wc -l < "$tsv") libraries of $programs programs and components resolved in the kit or the base set;" \
  "stopped at: $last"
