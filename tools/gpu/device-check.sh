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
#   5. `meshplan bench --backend cuda`: every scheme x mask x length, measured next to predicted;
#   6. (issue 34) `curves`: torch SDPA's flash and cuDNN backends by length (1K-64K), head dim
#      (64, 128), full and causal, forward and backward, turned into the per-library kernel curves
#      of a topology file (bench/attention_curves.py -> curves.toml, with device, versions, date);
#   7. (issue 34) `calibrate`: `meshplan calibrate --backend cuda` on 8 virtual ranks;
#   8. (issue 34) `fidelity`: the GPU fidelity table (bench/fidelity.py --backend cuda): every
#      scheme's plans on 8 virtual ranks, predicted on the calibrated file against measured;
#   9. (issue 30) `ringsteps`: ring-flash-attention's forward on zigzag, striped and contiguous
#      shards taken apart on one GPU, each rank's attention call and merge per step timed
#      (bench/ring_layout_steps.py): where striped Ring's measured 15-18% over zigzag lies;
# then prints one summary table (tools/gpu/summarize.py).
#
#   bash tools/gpu/device-check.sh BUNDLE [STEPS]     STEPS: comma list of validate,compare,
#                                                     sanitize,efficiency,torchbench,bench,
#                                                     curves,calibrate,fidelity,ringsteps (default: the
#                                                     first six; they run in the order validate,
#                                                     compare, efficiency, torchbench, curves, ringsteps,
#                                                     calibrate, fidelity, bench, sanitize: the
#                                                     slowest and least likely to find news last)
# Environment: SEQ (compare, default 65536), MASKS (causal,full), SCHEMES (all 8), KERNELS (auto),
# COMPARE_REPEAT (compare's execute --repeat: 1 times one cold run, graph builds included; 3 a
# warm-up then 3 timed runs),
# SIZES (torch bench, 4096,8192,16384), QUICK=1 (fewer kernel-benchmark sizes), EFF_SEQ (efficiency,
# 131072), BENCH_SEQ (bench, 16K,64K), MEMCHECK_FILTER / RACECHECK_FILTER (kernel tests under the
# sanitizers; RACECHECK_FILTER=none skips racecheck), and per-step limits in seconds T_VALIDATE (300),
# T_COMPARE (420), T_SANITIZE (170 per tool), T_EFFICIENCY (420), T_TORCHBENCH (240), T_BENCH (300),
# T_CURVES (240), T_CALIBRATE (120), T_FIDELITY (420), T_RINGSTEPS (120), so that one device call can be sized to the
# time lent; CURVE_SIZES (1024,...,65536), FID_SEQ (fidelity lengths, 16K,64K), FID_HEADS (32).
# Everything is written to one folder, packed as $OUT/results.tgz when $OUT is set (the device
# tool brings back few files), else left in ./gpu-results.
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
bundle="$(cd "${1:?usage: device-check.sh BUNDLE [STEPS]}" && pwd)"
steps="${2:-validate,compare,sanitize,efficiency,torchbench,bench}"
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
  timeout "${T_VALIDATE:-300}" bash tools/gpu-validate.sh --run "$bundle" > "$OUT/validate.log" 2>&1 || status=1
  sed -n '/meshplan GPU validation/,$p' "$OUT/validate.log"
  pack
fi
if has compare; then
  echo "== execute --backend cuda vs torch float32 reference"
  PYTHONUNBUFFERED=1 timeout "${T_COMPARE:-420}" python3 tools/gpu/compare_with_torch.py --meshplan "$bundle/bin/meshplan" \
    --topology "$bundle/topologies/dgx-h100-1node.toml" --out "$OUT" --seq "${SEQ:-65536}" \
    --masks "${MASKS:-causal,full}" --kernels "${KERNELS:-auto}" ${SCHEMES:+--schemes "$SCHEMES"} \
    --repeat "${COMPARE_REPEAT:-1}" 2>&1 | tee "$OUT/compare.log" || status=1
  pack
fi
if has efficiency; then
  # Timing only (no float32 reference: at 128K it alone would take minutes); execute --repeat 3
  # after a warm-up, so cuDNN graph builds stay out of the median.
  echo "== efficiency: ring and mesh at ${EFF_SEQ:-131072} tokens on 8 virtual ranks"
  PYTHONUNBUFFERED=1 timeout "${T_EFFICIENCY:-420}" python3 tools/gpu/compare_with_torch.py --meshplan "$bundle/bin/meshplan" \
    --topology "$bundle/topologies/dgx-h100-1node.toml" --out "$OUT" --name efficiency --seq "${EFF_SEQ:-131072}" \
    --masks causal --kernels "${KERNELS:-auto}" --schemes ring,mesh --no-reference --repeat 3 2>&1 | tee "$OUT/efficiency.log" || status=1
  pack
fi
if has torchbench; then
  echo "== torch SDPA on the kernel benchmark's shapes"
  PYTHONUNBUFFERED=1 timeout "${T_TORCHBENCH:-240}" python3 bench/torch_sdpa_bench.py --sizes "${SIZES:-4096,8192,16384}" \
    --json "$OUT/torch_sdpa.json" 2>&1 | tee "$OUT/torch_sdpa.log" || status=1
  pack
fi
if has curves; then
  echo "== attention library curves: torch SDPA flash and cuDNN, 1K-64K, d 64 and 128"
  PYTHONUNBUFFERED=1 timeout "${T_CURVES:-240}" python3 bench/torch_sdpa_bench.py \
    --sizes "${CURVE_SIZES:-1024,2048,4096,8192,16384,32768,65536}" --dims 64,128 --repeat 5 \
    --json "$OUT/curves_sdpa.json" > "$OUT/curves_sdpa.log" 2>&1 || status=1
  # The dense bf16 peak the curves are fractions of (H100 and H200 SXM: 989 TFLOP/s, A100: 312).
  gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  case "$gpu_name" in
    *H100*|*H200*) peak=989 ;;
    *A100*) peak=312 ;;
    *) peak="" ;;
  esac
  if [ -n "$peak" ] && [ -f "$OUT/curves_sdpa.json" ]; then
    python3 bench/attention_curves.py "$OUT/curves_sdpa.json" --peak-tflops "$peak" > "$OUT/curves.toml" || status=1
    cat "$OUT/curves.toml"
  else
    echo "curves: no peak known for '$gpu_name' (or no measurement); see $OUT/curves_sdpa.log"
  fi
  pack
fi
if has ringsteps; then
  echo "== ring-flash-attention's forward by layout, step by step (8 ranks of 8K tokens, 32/8 heads, d 128)"
  PYTHONUNBUFFERED=1 timeout "${T_RINGSTEPS:-120}" python3 bench/ring_layout_steps.py \
    --json "$OUT/ring_layout_steps.json" 2>&1 | tee "$OUT/ring_layout_steps.log" || status=1
  pack
fi
if has calibrate; then
  echo "== meshplan calibrate --backend cuda (8 virtual ranks)"
  timeout "${T_CALIBRATE:-120}" "$bundle/bin/meshplan" calibrate --backend cuda --ranks 8 --head-dim 128 --heads "${FID_HEADS:-32}" --quick \
    -o "$OUT/machine-gpu.toml" > "$OUT/calibrate.log" 2>&1 || status=1
  tail -12 "$OUT/calibrate.log"
  pack
fi
if has fidelity; then
  echo "== GPU fidelity table: predicted on the calibrated GPU file vs measured, 8 virtual ranks"
  PYTHONUNBUFFERED=1 timeout "${T_FIDELITY:-420}" python3 bench/fidelity.py --meshplan "$bundle/bin/meshplan" \
    --backend cuda --ranks 8 --mpi-ranks '' --seq "${FID_SEQ:-16K,64K}" --heads "${FID_HEADS:-32}" --kv-heads 8 \
    --head-dim 128 --repeat 3 --rounds 1 --quick --out "$OUT/fidelity" > "$OUT/fidelity.log" 2>&1 || status=1
  tail -6 "$OUT/fidelity.log"
  pack
fi
if has bench; then
  # The LongCA-style table (issue 12) on 8 virtual ranks: every scheme's best plan, TFLOP/s per
  # rank and peak device memory, measured next to predicted on the plan's H100 node.
  echo "== meshplan bench --backend cuda"
  timeout "${T_BENCH:-300}" "$bundle/bin/meshplan" bench --backend cuda -t "$bundle/topologies/dgx-h100-1node.toml" \
    --seq "${BENCH_SEQ:-16K,64K}" --mask causal,full --heads 32 --kv-heads 8 --head-dim 128 --pass fwd+bwd \
    --repeat 3 --format json -o "$OUT/bench.json" --charts "$OUT/bench-charts" > "$OUT/bench.log" 2>&1 || status=1
  tail -5 "$OUT/bench.log"
fi
if has sanitize; then
  # memcheck over every kernel test; racecheck (much slower) over a tensor-core subset that
  # covers both element types, both head dims, the masks with partial tiles and the head splits.
  for tool in memcheck racecheck; do
    filter="${MEMCHECK_FILTER:-*}"
    [ "$tool" = racecheck ] && filter="${RACECHECK_FILTER:-*bf16_d64_causal_tensor*:*fp16_d128_window_tensor*:*BackwardHeadSplits*}"
    [ "$filter" = none ] && continue
    echo "== compute-sanitizer $tool (kernel tests: $filter)"
    timeout "${T_SANITIZE:-170}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bundle/bin/meshplan_cuda_kernel_tests" --gtest_brief=1 "--gtest_filter=$filter" > "$OUT/sanitizer-$tool.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    pack
    echo "exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|tests ran|PASSED|FAILED' "$OUT/sanitizer-$tool.log" | tail -3 | tr '\n' ' ')"
  done
fi
python3 tools/gpu/summarize.py "$OUT" | tee "$OUT/summary.txt"
pack
exit $status
