#!/usr/bin/env python3
"""Fits the GPU catalog's step_kernel_rate_fraction on NeMo's performance summary.

A whole training step runs its kernels slower than the kernels run alone, as the GEMM and
attention curves were measured (the clock a step's power draw allows, the framework's time between
kernels). `step_kernel_rate_fraction` (topologies/gpus/*.toml) is that ratio: `meshplan step`
stretches every kernel's time by its inverse. This program finds, for each row of
bench/published/nemo_summary.csv (NeMo 24.07's performance summary, FP8 on DGX H100; not the
long-sequence table bench/published_step.py checks), the fraction at which meshplan's model
TFLOP/s per GPU equals the measured one, and prints the median over the rows marked `fit` (the
value to write into the catalog) and each row's error at the value the catalog holds now.

  python3 bench/step_kernel_rate_fit.py [--meshplan build/tools/meshplan] [--csv F]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import published_step

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print("step_kernel_rate_fit: " + message, file=sys.stderr)
    sys.exit(2)


def cluster_with_fraction(topology, fraction, directory):
    """The row's cluster file with [gpu] step_kernel_rate_fraction set (None: as shipped)."""
    if fraction is None:
        return topology
    path = os.path.join(ROOT, "topologies", topology + ".toml")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        fail(path + ": " + e.strerror)
    text, count = re.subn(r"^\[gpu\]\s*$", "[gpu]\nstep_kernel_rate_fraction = %.6f" % fraction,
                          text, count=1, flags=re.M)
    if count != 1:
        fail(path + ": no [gpu] table to set step_kernel_rate_fraction in")
    out = os.path.join(directory, "%s-%.6f.toml" % (topology, fraction))
    with open(out, "w") as f:
        f.write(text)
    return out


def predicted_tflops(meshplan, row, fraction, directory):
    cmd = [meshplan, "step", "--model", row["model"], "-t",
           cluster_with_fraction(row["topology"], fraction, directory), "--gpus", row["gpus"],
           "--seq", row["seq"], "--gemm-dtype", row["gemm_dtype"], "--global-batch",
           row["global_batch"], "--framework", "megatron", "--tp", row["tp"], "--pp", row["pp"],
           "--dp", row["dp"], "--cp", row["cp"], "--vpp", row["vpp"], "--recompute", "none",
           "--format", "json", "-q"]
    if row["tp_comm_overlap"] == "yes":
        cmd.append("--tp-comm-overlap")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(row["id"] + ": " + " ".join(cmd) + ": " + done.stderr.strip())
    return json.loads(done.stdout)["model_tflops_per_gpu"]


def implied_fraction(meshplan, row, directory):
    """Bisection on (0, 1]: the model TFLOP/s rise with the fraction."""
    measured = float(row["model_tflops_per_gpu"])
    lo, hi = 0.05, 1.0
    if predicted_tflops(meshplan, row, hi, directory) < measured:
        return None  # slower than measured even at the kernels' own rates
    for _ in range(30):
        mid = (lo + hi) / 2
        if predicted_tflops(meshplan, row, mid, directory) < measured:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    parser.add_argument("--csv",
                        default=os.path.join(ROOT, "bench", "published", "nemo_summary.csv"))
    parser.add_argument("--check-catalog", action="store_true",
                        help="fail (exit 1) unless the fit equals the H100 catalog entry's value "
                             "to 3 decimals (topologies/gpus/h100-sxm5.toml)")
    args = parser.parse_args()
    try:
        rows = published_step.read_rows(args.meshplan, args.csv)
    except published_step.InputError as e:
        fail(str(e))
    print("| row | TP x PP x DP x CP (VPP) | role | measured | at 1.0 | implied fraction | "
          "with the catalog's | error |")
    print("|---|---|---|---|---|---|---|---|")
    fitted = []
    with tempfile.TemporaryDirectory() as directory:
        for row in rows:
            measured = float(row["model_tflops_per_gpu"])
            alone = predicted_tflops(args.meshplan, row, 1.0, directory)
            fraction = implied_fraction(args.meshplan, row, directory)
            shipped = predicted_tflops(args.meshplan, row, None, directory)
            if row["role"] == "fit" and fraction is not None:
                fitted.append(fraction)
            print("| %s | %s x %s x %s x %s (%s) | %s | %.0f | %.0f | %s | %.0f | %+.1f%% |" % (
                row["id"].split(".", 1)[1], row["tp"], row["pp"], row["dp"], row["cp"],
                row["vpp"], row["role"], measured, alone,
                "%.3f" % fraction if fraction is not None else "above 1", shipped,
                100 * (shipped / measured - 1)))
    if not fitted:
        fail("no row marked fit has a fraction in (0, 1]")
    print()
    value = statistics.median(fitted)
    print("fitted step_kernel_rate_fraction (median over %d fit rows): %.3f" % (len(fitted), value))
    if args.check_catalog:
        path = os.path.join(ROOT, "topologies", "gpus", "h100-sxm5.toml")
        with open(path) as f:
            found = re.search(r"^step_kernel_rate_fraction\s*=\s*([0-9.]+)", f.read(), re.M)
        if found is None or abs(float(found.group(1)) - value) > 0.0005:
            print("step_kernel_rate_fit: %s holds %s, the fit gives %.3f: write the fit there" %
                  (path, found.group(1) if found else "no value", value), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
