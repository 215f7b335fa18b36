#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only): every library and
# the libraries' test programs built with -fsanitize=address,undefined (MESHPLAN_SANITIZE, -O0: a
# third of -O1's compile time with UBSan's checks, and CI has 90 minutes for everything; the
# kernels keep -O2, executor/CMakeLists.txt), then CTest.
# Left out, and why (docs/fuzzing.md, "Sanitizer unit tests"):
# - tests that run no C++ of their own under the sanitizers' eyes that a kept test does not: the
#   Python and shell checks of the suite (published suites, README examples and images, format,
#   install, curves), which run the command as a black box and take minutes under ASan; cli_fuzz
#   (its cases' 30 s limit is too short for an -O0 `fit`; tests/fuzz's parsers run under ASan in
#   CI's fuzz step) and the scheme-name scan of the source tree (90 s of regexes at -O0);
# - the same code at larger sizes: the numerics over every scheme at more ranks (/2 and up; /0
#   and /1 run the same kernels and transport), the estimate-agreement property over every plan
#   and the simulator's replays of whole schedules at scale (mixed fabrics, 1024 ranks, views,
#   symmetry proofs: 15-84 s each, the small cases of the same code stay), the calibrations that
#   time this machine for minutes (a whole engine calibration, CalibrateSmoke);
# - the programs not built: tools (the CLI, run as subprocesses: the libraries it calls are tested
#   directly) and meta (reads the source tree); their tests are named *_NOT_BUILT here;
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
# The libraries' own test programs; the CLI's (tools: subprocesses of the instrumented binary, whose
# code these programs test directly, 300 s) and the source-tree checks (meta) are not built here.
programs="meshplan_core_tests meshplan_planner_tests meshplan_step_tests meshplan_simulator_tests"
programs+=" meshplan_executor_tests meshplan_capacity_tests meshplan_report_tests"
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$(nproc)" --target $programs
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
left_out+='|EstimateAgreementProperty\.MixedFabricsAddNoDisagreementOfTheirOwn|SchemeScheduleTest\.CheckerScalesTo1024Ranks'
left_out+='|Coalesce\.TheTimingViewReplaysLikeEveryOp|SymmetricReplay\.RepresentativesReplayLikeEveryRankWithSharedUplinks'
left_out+='|ViewExpansion\.(ViewMadeDuringExpansionReplaysLikeTheFullSchedulesView|TheReplayFormMadeDuringTheExpansionReplaysLikeTheViewsOps)'
left_out+='|StructuralSymmetry\.EveryProofIsConfirmedByDigestingEveryRank'
left_out+='|EstimateAgreement\.SimulatedTimeIsWithinFifteenPercentOfTheEstimate'
left_out+='|.*_NOT_BUILT)$'
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE "gpu|mpi" -E "$left_out"
