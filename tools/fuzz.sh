#!/bin/sh
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) and runs each for SECONDS
# seconds (default 60) from its seed corpus: the shipped topologies (and tests/fuzz/corpus/
# topology_toml) for topology_toml, the shipped
# models for model_config, the files in tests/fuzz/corpus/TARGET for the others. Inputs that crash, leak, hang or trip a sanitizer
# are saved as BUILD/fuzz-artifacts/TARGET-*; the exit status is non-zero if any target failed.
# Each target prints libFuzzer's final stats (execs, coverage) on the last lines of its log,
# BUILD/fuzz-logs/TARGET.log. CI runs it for 30 s per target (.ci/run, docs/fuzzing.md).
#
#   tools/fuzz.sh [SECONDS] [BUILD_DIR]      JOBS=N for a parallel build (default 1)
# Exit status: 0 all ran clean, 1 a target failed, 3 the compiler cannot build fuzz targets.
set -eu

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-fuzz}
targets="topology_toml plan_toml sweep_file documents counts npy model_config nccl_tests_log csv_append"

if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX=${CXX:-clang++} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHPLAN_BUILD_FUZZ=ON \
    -DMESHPLAN_BUILD_TESTS=OFF -DMESHPLAN_BUILD_BENCH=OFF -DMESHPLAN_ENABLE_CUDA=OFF >/dev/null
fi
if ! grep -q '^MESHPLAN_HAVE_LIBFUZZER:INTERNAL=1' "$build/CMakeCache.txt"; then
  echo "fuzz: $(grep '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2) cannot link -fsanitize=fuzzer: no fuzz targets (cmake/Fuzz.cmake)" >&2
  exit 3
fi
cmake --build "$build" --target meshplan_fuzzers -j "${JOBS:-1}"

mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
failed=""
for target in $targets; do
  corpus="$build/fuzz-corpus/$target"
  mkdir -p "$corpus"
  if [ "$target" = topology_toml ]; then
    cp "$root"/topologies/*.toml "$root"/tests/mpi/four_gpus.toml "$corpus"/
    cp "$root"/tests/fuzz/corpus/topology_toml/* "$corpus"/  # what no shipped file has (fabrics)
  elif [ "$target" = model_config ]; then
    cp "$root"/models/*.json "$corpus"/
  else
    cp "$root/tests/fuzz/corpus/$target"/* "$corpus"/
  fi
  log="$build/fuzz-logs/$target.log"
  if "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" "$corpus" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed="$failed $target"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz_$target: $status, ${execs:-?} execs in ${seconds} s, $cov"
done
if [ -n "$failed" ]; then
  echo "failed:$failed (inputs in $build/fuzz-artifacts, logs in $build/fuzz-logs)" >&2
  exit 1
fi
