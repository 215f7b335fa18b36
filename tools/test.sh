#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite. Usage: bash tools/test.sh [build-dir]
# ctest's own lines are printed as they come, except its list of tests that did not run: that
# ends as one line saying how many were skipped and why (the GPU tests skip without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" 2>&1 | tee "$log" |
  awk '/^The following tests did not run:/ { listing = 1; next }
       listing && /^\t/ { next }
       { listing = 0; print }'
status=${PIPESTATUS[0]}
set -e

# The tests that did not run: ctest lists them as "\t<n> - <name> (Skipped)".
skipped=$(awk '/^The following tests did not run:/ { listing = 1; next }
               listing && /^\t/ { n++ ; next } { listing = 0 } END { print n + 0 }' "$log")
if [ "$skipped" -gt 0 ]; then
  gpu=$(ctest --test-dir "$build_dir" -N -L gpu 2>/dev/null | awk '/Total Tests:/ { print $3 }')
  gpu=${gpu:-0}
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    why="a CUDA device is present: each skipped test says why in the output above"
  elif [ "$skipped" -gt "$gpu" ]; then
    why="$gpu GPU tests (no CUDA device here) and $((skipped - gpu)) that skipped themselves,
       each saying why above"
  else
    why="the GPU tests, label gpu: no CUDA device on this machine"
  fi
  echo "tests: $skipped did not run: $why"
  echo "       (ctest --test-dir $build_dir -N -L gpu lists the GPU tests)"
fi
exit "$status"
