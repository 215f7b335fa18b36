#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only): every library and
# test program built with -fsanitize=address,undefined (MESHPLAN_SANITIZE, -O1), then CTest.
# Left out, and why (docs/fuzzing.md, "Sanitizer unit tests"): readme_examples and CalibrateSmoke
# time this machine and take minutes under ASan; install only copies files; MPI is not built;
# Guard17.ExecuteWithBatch2To40IsOneLineNotAnAbort checks that a failed allocation becomes
# std::bad_alloc and one error line, but ASan's operator new reports out of memory and exits.
# Usage: bash tools/sanitize-test.sh [build-dir]   (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-asan}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DMESHPLAN_SANITIZE=ON -DMESHPLAN_ENABLE_CUDA=OFF -DMESHPLAN_BUILD_BENCH=OFF -DMESHPLAN_WITH_MPI=OFF >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)"
# Leak checking needs ptrace, which containers often deny; MESHPLAN_ASAN_LEAKS=1 turns it on where
# it works.
export ASAN_OPTIONS="detect_leaks=${MESHPLAN_ASAN_LEAKS:-0}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE "gpu|mpi" \
  -E "^(readme_examples|CalibrateSmoke|install|Guard17\.ExecuteWithBatch2To40IsOneLineNotAnAbort)$"
