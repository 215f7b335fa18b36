#!/usr/bin/env bash
# The suite's timing-sensitive tests with other work on the machine (issue 48): starts LOAD busy
# loops (default 4), runs the tests that time this machine (the engine calibration's block and
# message timings, the calibrate-then-execute smoke test) and stops the loops. Those tests must
# pass (or say why they skip) however busy the machine is: CI runs this after tools/test.sh.
# Usage: bash tools/test-under-load.sh [build-dir] [LOAD]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
load="${2:-4}"
# shellcheck source=tools/busy-loops.sh
source tools/busy-loops.sh
start_busy_loops "$load"
echo "test-under-load: $load busy loops beside the timing tests"
ctest --test-dir "$build_dir" --output-on-failure -R '^(CalibrateSmoke|EngineCalibration\.)'
