#!/usr/bin/env bash
# One-command validation of the GPU executor on a machine with an NVIDIA GPU: builds with CUDA,
# runs the GPU tests (kernels against the CPU reference, every scheme on virtual ranks), the kernel
# benchmark against cuBLAS, and `meshplan execute --backend cuda --check` on sample plans, then
# prints one table. Results and logs go to $OUT when set (the device tool), else ./gpu-results.
#
#   bash tools/gpu-validate.sh              build in build-gpu, then run everything
#   bash tools/gpu-validate.sh --bundle DIR build here, copy the programs and the non-CUDA shared
#                                           libraries they need into DIR (to run on another machine)
#   bash tools/gpu-validate.sh --run DIR    run from a bundle (no build)
#   QUICK=1 ...                             fewer benchmark sizes (1K..8K, no 16K)
#   BUILD_DIR=dir ...                       build directory (default build-gpu)
#   T_ENGINE=seconds ...                    time limit of the engine tests (default none)
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
build_dir="${BUILD_DIR:-build-gpu}"
mode="all"
bundle=""
case "${1:-}" in
  --bundle) mode="bundle"; bundle="${2:?--bundle needs a directory}" ;;
  --run) mode="run"; bundle="${2:?--run needs a directory}" ;;
  "") ;;
  *) echo "usage: bash tools/gpu-validate.sh [--bundle DIR | --run DIR]" >&2; exit 2 ;;
esac
programs=(tools/meshplan tests/cuda/meshplan_cuda_kernel_tests tests/cuda/meshplan_cuda_engine_tests
          bench/cuda_kernel_bench)

build() {
  local gencode="${MESHPLAN_CUDA_GENCODE:--gencode=arch=compute_90a,code=sm_90a;-gencode=arch=compute_80,code=compute_80}"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DMESHPLAN_ENABLE_CUDA=ON \
        "-DMESHPLAN_CUDA_GENCODE=$gencode" >/dev/null || return 1
  cmake --build "$build_dir" -j "$(nproc)" || return 1
  for p in "${programs[@]}"; do
    [ -x "$build_dir/$p" ] || { echo "gpu-validate: $build_dir/$p was not built (is CUDA in /usr/local/cuda?)" >&2; return 1; }
  done
}

if [ "$mode" = "all" ] || [ "$mode" = "bundle" ]; then
  build || exit 1
fi
if [ "$mode" = "bundle" ]; then
  rm -rf "$bundle"; mkdir -p "$bundle/bin" "$bundle/lib"
  for p in "${programs[@]}"; do cp "$build_dir/$p" "$bundle/bin/"; done
  # Shared libraries outside the C runtime and the CUDA driver/toolkit (those come from the GPU
  # machine's own /usr/local/cuda); OpenMPI's plugins are not needed by these runs.
  for p in "${programs[@]}"; do
    ldd "$build_dir/$p" | awk '/=> \// {print $3}' | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libcuda.so*) ;;
        libcudart.so*|libcublas*|libnccl.so*|libnvidia*) ;;
        libstdc++.so*|libz.so*|libudev.so*) ;;  # the GPU machine has its own (newer ones)
        *) cp -L -n "$lib" "$bundle/lib/" ;;
      esac
    done
  done
  cp -r topologies "$bundle/"
  du -sh "$bundle"
  exit 0
fi

if [ "$mode" = "run" ]; then
  bin="$bundle/bin"; export LD_LIBRARY_PATH="$bundle/lib:${LD_LIBRARY_PATH:-}"
  for p in "${programs[@]}"; do cp "$bin/$(basename "$p")" /dev/null || exit 1; done
  kernel_tests="$bin/meshplan_cuda_kernel_tests"; engine_tests="$bin/meshplan_cuda_engine_tests"
  bench="$bin/cuda_kernel_bench"; meshplan="$bin/meshplan"
else
  kernel_tests="$build_dir/tests/cuda/meshplan_cuda_kernel_tests"; engine_tests="$build_dir/tests/cuda/meshplan_cuda_engine_tests"
  bench="$build_dir/bench/cuda_kernel_bench"; meshplan="$build_dir/tools/meshplan"
fi
# CUDA libraries: the toolkit's, and NCCL and cuDNN wherever this machine has them (toolkit,
# system, or the nvidia-nccl / nvidia-cudnn Python wheels beside PyTorch); both are opened at run
# time, so a missing one only turns off what needs it.
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null) \
           $(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null); do
  [ -d "$dir" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$dir"
done

out="${OUT:-$root/gpu-results}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

status=0
echo "== kernel tests"
"$kernel_tests" --gtest_brief=1 > "$out/kernel_tests.log" 2>&1 || status=1
tail -3 "$out/kernel_tests.log"
echo "== engine tests (every scheme, virtual ranks on one GPU)"
# T_ENGINE (seconds, default none) bounds the engine tests so that a slow one cannot keep the
# execute checks and the kernel benchmark after it from running inside a device call's limit.
timeout "${T_ENGINE:-0}" "$engine_tests" > "$out/engine_tests.log" 2>&1 || status=1
tail -3 "$out/engine_tests.log"

echo "== meshplan execute --backend cuda --check"
plans="$out/plans"; mkdir -p "$plans"
: > "$out/execute.tsv"
# 8 ranks (one DGX H100 node) as virtual ranks on this GPU; 2K tokens keeps the float64 CPU
# reference of the check to seconds.
topo="$root/topologies/dgx-h100-1node.toml"; [ -f "$topo" ] || topo="$bundle/topologies/dgx-h100-1node.toml"
# Every scheme the binary's registry lists (the one list of schemes).
schemes="$("$meshplan" plan --list-schemes | awk '{print $1}')" || { echo "gpu-validate: $meshplan plan --list-schemes failed" >&2; exit 2; }
for scheme in $schemes; do
  plan="$plans/$scheme.toml"
  if ! "$meshplan" plan --topology "$topo" --seq 2K --heads 8 --kv-heads 8 --head-dim 128 --mask causal \
       --pass fwd+bwd --schemes "$scheme" --pick 1 --out "$plan" --quiet > "$out/plan-$scheme.log" 2>&1; then
    printf '%s\tno plan\t-\t-\n' "$scheme" >> "$out/execute.tsv"; continue
  fi
  if "$meshplan" execute "$plan" --backend cuda --check --format json > "$out/execute-$scheme.json" 2> "$out/execute-$scheme.err"; then
    result=pass
  else
    result=FAIL; status=1
  fi
  python3 - "$out/execute-$scheme.json" "$scheme" "$result" >> "$out/execute.tsv" <<'PY'
import json, sys
path, scheme, result = sys.argv[1:4]
try:
    j = json.load(open(path))
    worst = max(j["check"]["max_relative_error"].values()) if "check" in j else float("nan")
    print(f"{scheme}\t{result}\t{worst:.2e}\t{j['measured']['time_s']*1e3:.2f} ms")
except Exception as e:
    err = open(path[:-len(".json")] + ".err").read().strip().splitlines()
    print(f"{scheme}\t{result}\t-\t-\t{err[0] if err else ''}")
PY
done

echo "== kernel benchmark"
filter=""
[ "${QUICK:-0}" = 1 ] && filter="--benchmark_filter=Gemm|n:[1248]K/"
"$bench" $filter --benchmark_format=json --benchmark_out="$out/kernel_bench.json" > "$out/kernel_bench.log" 2>&1 || status=1

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
print("\n================ meshplan GPU validation ================")
print(open(os.path.join(out, "gpu.txt")).read().strip())
for name in ("kernel_tests", "engine_tests"):
    lines = [l for l in open(os.path.join(out, name + ".log"))
             if l.startswith(("[  PASSED", "[  FAILED", "[  SKIPPED")) or "tests ran" in l]
    print(f"{name:14s} " + " | ".join(l.strip() for l in lines[-3:]))
print("\nexecute --backend cuda --check (scheme, result, max relative error, measured time)")
print(open(os.path.join(out, "execute.tsv")).read().rstrip())
try:
    bench = json.load(open(os.path.join(out, "kernel_bench.json")))
except Exception:
    print("\nkernel benchmark: no results (see kernel_bench.log)"); sys.exit(0)
print("\nkernel benchmark (bf16, TFLOP/s and fraction of the cuBLAS bf16 GEMM rate in the same run)")
print(f"{'benchmark':34s} {'ms':>9s} {'TFLOP/s':>9s} {'of GEMM':>8s}")
for b in bench["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    t = b.get("TFLOP/s", float("nan"))
    f = b.get("fraction_of_gemm", float("nan"))
    print(f"{b['name']:34s} {b['real_time']:9.3f} {t:9.1f} {f:8.2f}")
PY
exit $status
