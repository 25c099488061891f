#!/usr/bin/env bash
# The planner's frontier searches as ratios to the 530B/4480-GPU search of the same run (issue 59):
# bench_planner's three benchmarks, REPS repetitions each (default 3), the median kept.
# Usage: bench/planner_ratios.sh [BENCH_PLANNER] [REPS]   (default build/bench/bench_planner)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/bench/bench_planner}"
reps="${2:-3}"
[ -x "$bin" ] || { echo "planner_ratios: $bin is not built (PARALLAX_BENCH, libbenchmark-dev)" >&2; exit 2; }
"$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
rows = {b["run_name"].split("/")[0]: b for b in json.load(sys.stdin)["benchmarks"] if b.get("aggregate_name") == "median"}
base = rows["BM_PlanMtNlg4480"]["real_time"]
for name, b in rows.items():
    t, n = b["real_time"], int(b.get("plans_evaluated", 0))
    print("%-32s %9.1f ms  %6.2fx the 530B search  %6d plans" % (name, t, t / base, n))
'
