#!/usr/bin/env python3
"""One table from the logs of tools/gpu/device-check.sh (its results folder):
tests and sanitizers, the 8 schemes against torch's float32 reference with the executor's
throughput next to one whole-sequence torch call, and the block kernels (own, cuDNN path)
against torch SDPA (flash, cuDNN) on the same shapes.

  python3 tools/gpu/summarize.py RESULTS_DIR
"""
import json
import os
import re
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def tests_line(out, name):
    text = read(os.path.join(out, name + ".log"))
    if text is None:
        return f"{name:22s} not run"
    passed = re.findall(r"\[  PASSED  \] (\d+) test", text)
    # gtest_brief prints one "[  FAILED  ] name (N ms)" line per failed test and no count.
    failed = sorted({t.rstrip(",") for t in re.findall(r"^\[  FAILED  \] (\S+).*\(\d+ ms\)$", text, re.M)})
    skipped = re.findall(r"\[  SKIPPED \] (\d+) test", text)
    line = (f"{name:22s} passed {passed[-1] if passed else 0}, failed {len(failed)}, "
            f"skipped {skipped[-1] if skipped else 0}")
    return line + "".join(f"\n    FAILED {t}" for t in failed)


def sanitizer_line(out, tool):
    text = read(os.path.join(out, f"sanitizer-{tool}.log"))
    if text is None:
        return f"compute-sanitizer {tool:9s} not run"
    summary = re.findall(r"(ERROR SUMMARY: \d+ errors?|RACECHECK SUMMARY: .*)", text)
    return f"compute-sanitizer {tool:9s} {summary[-1] if summary else 'no summary (cut off by its time limit?)'}"


def compare_rows(out, name):
    text = read(os.path.join(out, name))
    if text is None:
        return []
    j = json.loads(text)
    rows = []
    for r in j["results"]:
        if "error" in r:
            rows.append(f"{r['scheme']:13s} {r['mask']:6s} {r['error']}")
            continue
        errs = (" ".join(f"{t}={r[t]:.1e}" for t in ("o", "lse", "dq", "dk", "dv")) if "o" in r
                else "(timing only)")
        # fwd+bwd useful FLOPs: 3.5 x 4 S^2 Hq d, halved for causal (as compare_with_torch.py).
        flops = r.get("flops") or (3.5 * 4.0 * j["seq"] ** 2 * j["heads"] * j["dim"] *
                                   (0.5 if r["mask"] == "causal" else 1.0))
        tflops = flops / r["measured_ms"] / 1e9
        whole_ms = r.get("torch_cudnn_ms", float("nan"))
        whole = flops / whole_ms / 1e9 if whole_ms == whole_ms else float("nan")
        rows.append(f"{r['scheme']:13s} {r['mask']:6s} S={j['seq']:<7d} {errs}  {r['measured_ms']:8.1f} ms "
                    f"{tflops:5.0f} TFLOP/s = {tflops / whole:4.2f} of torch cuDNN whole ({whole:.0f}), "
                    f"torch flash whole {flops / r['torch_flash_ms'] / 1e9:.0f}")
    return rows


def kernel_rows(out):
    ours = {}
    text = read(os.path.join(out, "kernel_bench.json"))
    if text:
        for b in json.loads(text).get("benchmarks", []):
            m = re.match(r"BM_(Forward|Backward)/n:(\d+)K/d:(\d+)/(full|causal)(?:/(own|cudnn))?", b["name"])
            if m and "TFLOP/s" in b:
                key = (int(m.group(2)) * 1024, int(m.group(3)), m.group(4), "fwd" if m.group(1) == "Forward" else "bwd")
                ours[(key, m.group(5) or "own")] = b["TFLOP/s"]  # no suffix: before the cuDNN path
    theirs = {}
    text = read(os.path.join(out, "torch_sdpa.json"))
    if text:
        for r in json.loads(text)["rows"]:
            if "tflops" in r:
                theirs[((r["n"], r["d"], r["mask"], r["pass"]), r["backend"])] = r["tflops"]
    keys = sorted({k for k, _ in ours} | {k for k, _ in theirs})
    rows = []
    for k in keys:
        own, cud = ours.get((k, "own")), ours.get((k, "cudnn"))
        fl, tc = theirs.get((k, "flash")), theirs.get((k, "cudnn"))
        fmt = lambda x: f"{x:7.1f}" if x is not None else "      -"
        ratio = lambda a, b: f"{a / b:5.2f}" if a is not None and b else "    -"
        rows.append(f"n={k[0]:<6d} d={k[1]:<4d} {k[2]:6s} {k[3]}  own {fmt(own)}  cudnn-path {fmt(cud)}  "
                    f"torch-flash {fmt(fl)}  torch-cudnn {fmt(tc)}  path/flash {ratio(cud, fl)}  path/torch-cudnn {ratio(cud, tc)}")
    return rows


def bench_rows(out):
    """`meshplan bench --backend cuda` rows: TFLOP/s per rank and peak device memory, measured next to
    predicted, with the signed error of the time."""
    text = read(os.path.join(out, "bench.json"))
    if text is None:
        return []
    try:
        j = json.loads(text)
    except ValueError:
        return ["bench.json does not parse (cut off?)"]
    rows = []
    for r in j["rows"]:
        head = f"{r['mask']:6s} S={r['seq_len']:<7d} {r['scheme']:13s}"
        if r["outcome"] != "ran":
            rows.append(f"{head} {r['outcome']}: {r.get('reason', '')}")
            continue
        rows.append(f"{head} median {r['median_s'] * 1e3:8.2f} ms (spread {r['spread'] * 100:4.1f}%)  predicted "
                    f"{r['predicted_s'] * 1e3:8.2f} ms  error {r['error_pct']:+7.1f}%  "
                    f"{r['tflops_per_rank']:6.1f} TFLOP/s/rank (predicted {r['predicted_tflops_per_rank']:6.1f})  "
                    f"peak {r['rank_peak_bytes'] / 2**30:5.2f} GiB/rank (model {r['modelled_rank_peak_bytes'] / 2**30:5.2f})")
    return rows


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "gpu-results"
    print("\n================ meshplan GPU checks: summary ================")
    env = read(os.path.join(out, "env.txt"))
    if env:
        print(env.strip())
    for name in ("kernel_tests", "engine_tests"):
        print(tests_line(out, name))
    execute = read(os.path.join(out, "execute.tsv"))
    if execute:
        print("execute --check (scheme, result, max error, measured):")
        print("  " + execute.strip().replace("\n", "\n  "))
    for tool in ("memcheck", "racecheck"):
        print(sanitizer_line(out, tool))
    for name in ("compare.json", "efficiency.json"):
        rows = compare_rows(out, name)
        if rows:
            print(f"\n{name[:-5]}: 8 virtual ranks vs torch float32 reference; TFLOP/s of the whole step on the GPU")
            print("\n".join(rows))
    rows = bench_rows(out)
    if rows:
        print("\nmeshplan bench --backend cuda (8 virtual ranks on this GPU, predicted on the plan's H100 node)")
        print("\n".join(rows))
    rows = kernel_rows(out)
    if rows:
        print("\nblock kernels, bf16, TFLOP/s (same shapes, same machine)")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
