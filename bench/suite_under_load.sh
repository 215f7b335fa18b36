#!/usr/bin/env bash
# Issue 48's first target: the README's test command passes with other work on the machine.
# Starts LOAD busy loops (default 4), runs `bash tools/test.sh BUILD` RUNS times (default 10) and
# prints one line per run (exit status, passed, failed, skipped, minutes) and a summary. The
# build must be up to date first (the runs then only test). Usage:
#   bash bench/suite_under_load.sh [RUNS] [LOAD] [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
load="${2:-4}"
build_dir="${3:-build}"
# shellcheck source=tools/busy-loops.sh
source tools/busy-loops.sh
start_busy_loops "$load"
log=$(mktemp)
green=0
echo "suite-under-load: $runs runs of tools/test.sh with $load busy loops on $(nproc) cores"
for i in $(seq "$runs"); do
  start=$(date +%s)
  bash tools/test.sh "$build_dir" >"$log" 2>&1
  status=$?
  minutes=$(awk -v s="$start" -v e="$(date +%s)" 'BEGIN { printf "%.1f", (e - s) / 60 }')
  summary=$(grep -E 'tests passed, [0-9]+ tests failed' "$log" | tail -1)
  skipped=$(grep -E '^tests: [0-9]+ did not run' "$log" | awk '{ print $2 }')
  echo "run $i: exit $status, ${summary:-no ctest summary}, ${skipped:-0} skipped, $minutes min"
  if [ "$status" -eq 0 ]; then
    green=$((green + 1))
  else
    grep -E '\(Failed\)|\(Timeout\)|\*\*\*' "$log" | head -20
  fi
done
rm -f "$log"
echo "suite-under-load: $green of $runs runs green"
[ "$green" -eq "$runs" ]
