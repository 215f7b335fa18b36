#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only): every library and
# test program built with -fsanitize=address,undefined (MESHPLAN_SANITIZE, -O0: a third of -O1's
# compile time with UBSan's checks, and CI has 90 minutes for everything), then CTest.
# Left out, and why (docs/fuzzing.md, "Sanitizer unit tests"):
# - tests that run no C++ of their own under the sanitizers' eyes that a kept test does not: the
#   Python and shell checks of the suite (published suites, README examples and images, format,
#   install, curves), which run the command as a black box and take minutes under ASan; cli_fuzz
#   (its cases' 30 s limit is too short for an -O0 `fit`; tests/fuzz's parsers run under ASan in
#   CI's fuzz step) and the scheme-name scan of the source tree (90 s of regexes at -O0);
# - the same code at larger sizes: the numerics over every scheme at more ranks (/2 and up; /0
#   and /1 run the same kernels and transport), the estimate-agreement property over every plan
#   (its mixed-fabric twin stays), the calibrations that time this machine for minutes (a whole
#   engine calibration, calibrate's draws, CalibrateSmoke; the other calibration tests stay);
# - MeshplanBinary, which reads the binary's dynamic libraries, not its behaviour;
# - MPI (not built); Guard17.ExecuteWithBatch2To40IsOneLineNotAnAbort checks that a failed
#   allocation becomes std::bad_alloc and one error line, but ASan's operator new reports out of
#   memory and exits.
# Usage: bash tools/sanitize-test.sh [build-dir]   (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-asan}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" \
    -DMESHPLAN_SANITIZE=ON -DMESHPLAN_ENABLE_CUDA=OFF -DMESHPLAN_BUILD_BENCH=OFF -DMESHPLAN_WITH_MPI=OFF >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)"
# Leak checking needs ptrace, which containers often deny; MESHPLAN_ASAN_LEAKS=1 turns it on where
# it works.
export ASAN_OPTIONS="detect_leaks=${MESHPLAN_ASAN_LEAKS:-0}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
left_out='^(readme_examples|readme_images|readme_checker_sees_memory|CalibrateSmoke|install|format'
left_out+='|published_.*|attention_curves|ring_layout_steps|calibration_repeatability_arith|gpu_probe'
left_out+='|unhandled_mask_kind|ctest_names_fit|cli_fuzz|SchemeUnits\.NoSchemeIsNamedOutsideItsUnitAndTheRegistry'
left_out+='|Guard17\.ExecuteWithBatch2To40IsOneLineNotAnAbort'
left_out+='|Ranks/(ExecuteNumerics|DeviceEngineNumerics)\..*/([2-9]|[1-9][0-9])'
left_out+='|EstimateAgreementProperty\.EveryPlanOfEverySchemeAgreesWithItsReplay'
left_out+='|EngineCalibration\.(CalibrateYieldsAValidTopology|BlockTimesFollowTheirWork)'
left_out+='|CalibrateCli\.DrawsAreCombinedAndTheirRangeRecorded|MeshplanBinary\..*)$'
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE "gpu|mpi" -E "$left_out"
