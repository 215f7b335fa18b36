#!/usr/bin/env bash
# The GPU checks of issue 13 in one command, on a machine with an NVIDIA GPU and PyTorch, run from
# a bundle built elsewhere (tools/gpu-validate.sh --bundle gpu-bundle):
#   1. every GPU test (tools/gpu-validate.sh --run: kernel and engine tests, execute --check on
#      small plans, the kernel benchmark), then compute-sanitizer memcheck and racecheck on the
#      kernel tests;
#   2. execute --backend cuda for the 8 schemes on 8 virtual ranks against torch's float32
#      reference on the same inputs (tools/gpu/compare_with_torch.py);
#   3. the executor's efficiency: ring and mesh on 8 virtual ranks at 128K tokens (causal), the
#      same comparison, TFLOP/s next to one whole-sequence torch call;
#   4. torch SDPA (flash, cuDNN) on the kernel benchmark's shapes (bench/torch_sdpa_bench.py);
# then prints one summary table (tools/gpu/summarize.py).
#
#   bash tools/gpu/device-check.sh BUNDLE [STEPS]     STEPS: comma list of validate,compare,
#                                                     sanitize,efficiency,torchbench (default all)
# Environment: SEQ (compare, default 65536), MASKS (causal,full), SCHEMES (all 8), KERNELS (auto),
# SIZES (torch bench, 4096,8192,16384), QUICK=1 (fewer kernel-benchmark sizes).
# Everything is written to one folder, packed as $OUT/results.tgz when $OUT is set (the device
# tool brings back few files), else left in ./gpu-results.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
bundle="$(cd "${1:?usage: device-check.sh BUNDLE [STEPS]}" && pwd)"
steps="${2:-validate,compare,sanitize,efficiency,torchbench}"
final_out="${OUT:-}"
export OUT="${final_out:+/tmp/meshplan-results}"
OUT="${OUT:-$root/gpu-results}"
rm -rf "$OUT"; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# cuDNN and NCCL where the machine has them only in PyTorch's environment (the device machines).
for module in nvidia.cudnn nvidia.nccl; do
  dir="$(python3 -c "import $module, os; print(os.path.join(list($module.__path__)[0], 'lib'))" 2>/dev/null)" || continue
  [ -d "$dir" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
done
has() { [[ ",$steps," == *",$1,"* ]]; }
# Packs what is there so far, so a run cut off by a time limit still brings its results back.
pack() { [ -z "$final_out" ] || tar czf "$final_out/results.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }
status=0

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cudnn|nccl)' | head -20
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if has validate; then
  echo "== gpu-validate"
  timeout 300 bash tools/gpu-validate.sh --run "$bundle" > "$OUT/validate.log" 2>&1 || status=1
  sed -n '/meshplan GPU validation/,$p' "$OUT/validate.log"
  pack
fi
if has compare; then
  echo "== execute --backend cuda vs torch float32 reference"
  PYTHONUNBUFFERED=1 timeout 420 python3 tools/gpu/compare_with_torch.py --meshplan "$bundle/bin/meshplan" \
    --topology "$bundle/topologies/dgx-h100-1node.toml" --out "$OUT" --seq "${SEQ:-65536}" \
    --masks "${MASKS:-causal,full}" --kernels "${KERNELS:-auto}" ${SCHEMES:+--schemes "$SCHEMES"} 2>&1 | tee "$OUT/compare.log" || status=1
  pack
fi
if has sanitize; then
  # memcheck over every kernel test; racecheck (much slower) over a tensor-core subset that
  # covers both element types, both head dims, the masks with partial tiles and the head splits.
  for tool in memcheck racecheck; do
    filter="*"
    [ "$tool" = racecheck ] && filter="${RACECHECK_FILTER:-*bf16_d64_causal_tensor*:*fp16_d128_window_tensor*:*BackwardHeadSplits*}"
    echo "== compute-sanitizer $tool (kernel tests: $filter)"
    timeout 170 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bundle/bin/meshplan_cuda_kernel_tests" --gtest_brief=1 "--gtest_filter=$filter" > "$OUT/sanitizer-$tool.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    pack
    echo "exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|tests ran|PASSED|FAILED' "$OUT/sanitizer-$tool.log" | tail -3 | tr '\n' ' ')"
  done
fi
if has efficiency; then
  echo "== efficiency: ring and mesh at 128K tokens on 8 virtual ranks"
  PYTHONUNBUFFERED=1 timeout 420 python3 tools/gpu/compare_with_torch.py --meshplan "$bundle/bin/meshplan" \
    --topology "$bundle/topologies/dgx-h100-1node.toml" --out "$OUT" --name efficiency --seq 131072 \
    --masks causal --kernels "${KERNELS:-auto}" --schemes ring,mesh 2>&1 | tee "$OUT/efficiency.log" || status=1
  pack
fi
if has torchbench; then
  echo "== torch SDPA on the kernel benchmark's shapes"
  PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_sdpa_bench.py --sizes "${SIZES:-4096,8192,16384}" \
    --json "$OUT/torch_sdpa.json" 2>&1 | tee "$OUT/torch_sdpa.log" || status=1
fi
python3 tools/gpu/summarize.py "$OUT" | tee "$OUT/summary.txt"
pack
exit $status
