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
rows = {b["run_name"]: b for b in json.load(sys.stdin)["benchmarks"] if b.get("aggregate_name") == "median"}
base = rows["BM_PlanMtNlg4480"]["real_time"]
for name, b in rows.items():
    print(f"{name:32s} {b[\"real_time\"]:9.1f} ms  {b[\"real_time\"] / base:6.2f}x the 530B search  "
          f"{int(b.get(\"plans_evaluated\", 0)):6d} plans")
'
