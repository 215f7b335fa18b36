#!/usr/bin/env python3
"""Whole-step suite: `meshplan step` against NeMo's published long-sequence table.

Reads bench/published/nemo_step.csv (NeMo Framework user guide 24.12, "Long Sequence Performance",
LLAMA2-7B, FP8, DGX H100: model TFLOP/s per GPU of the with-CP configurations as given), runs one
`meshplan step` per row with the row's TP, PP, DP and CP, FP8 GEMMs, the Megatron framework and no
recompute (the source states neither the recompute nor the global batch: no recompute, and a
global batch of 128 sequences, are this suite's assumptions, docs/training-step.md), and prints a
Markdown table of predicted against measured model TFLOP/s per GPU with the error of each row, the
median and the max |error|, and the step's parts; then, per row, meshplan's own search at that GPU
count (`--search`): its best configuration (at least as fast as NeMo's, predicted) and its best
without CP (`--cp 1`), whose ratio to NeMo's CP configuration is checked against the source's
with-CP / without-CP speedup wherever that exceeds 1.05.

Usage:
  python3 bench/published_step.py [--meshplan build/tools/meshplan] [--csv F] [--json FILE]
                                  [--max-median F] [--require-ordered]

Exit status: 0 on success; 1 when --max-median is given and the median |error| exceeds it, or
--require-ordered and a speedup is misordered or a search slower than NeMo's; 2 when
something the suite needs fails (binary, file, meshplan run). Python 3 standard library only.
"""

import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print("published_step: " + message, file=sys.stderr)
    sys.exit(2)


class InputError(Exception):
    """A meshplan binary that cannot run or a CSV that cannot be read; main says it, exit 2."""


def read_rows(meshplan, path):
    """The CSV's rows as dicts, once meshplan is known to be executable; InputError otherwise."""
    if not os.access(meshplan, os.X_OK):
        raise InputError(meshplan + ": not an executable (build first: bash tools/setup.sh)")
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise InputError(path + ": " + e.strerror) from e


PART_NAMES = {"attention_s": "attention", "gemm_s": "GEMMs", "elementwise_s": "element-wise",
              "tp_comm_s": "TP comm", "recompute_s": "recompute", "pp_p2p_s": "PP sends",
              "pp_bubble_s": "PP bubble", "dp_exposed_s": "DP comm", "optimizer_s": "optimizer"}


def run_row(meshplan, row, search=None, degrees=None):
    """The row's configuration; with search ("any" or "no-cp"), meshplan's own search instead;
    with degrees (a search's configuration), that configuration."""
    cmd = [meshplan, "step", "--model", row["model"], "-t", row["topology"], "--gpus", row["gpus"],
           "--seq", row["seq"], "--gemm-dtype", row["gemm_dtype"], "--global-batch",
           row["global_batch"], "--framework", "megatron", "--format", "json", "-q"]
    if degrees is not None:
        cmd += ["--tp", str(degrees["tp"]), "--pp", str(degrees["pp"]), "--dp",
                str(degrees["dp"]), "--cp", str(degrees["cp"]), "--recompute",
                degrees["recompute"]]
    elif search is None:
        cmd += ["--tp", row["tp"], "--pp", row["pp"], "--dp", row["dp"], "--cp", row["cp"],
                "--recompute", "none"]
    else:
        cmd += ["--search"] + (["--cp", "1"] if search == "no-cp" else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(row["id"] + ": " + " ".join(shlex.quote(c) for c in cmd) + ": " + done.stderr.strip())
    return cmd, json.loads(done.stdout)


def why_faster(nemo, best):
    """Where meshplan's configuration gains over NeMo's: the step's parts that differ by over 1% of
    NeMo's step, largest first, as "attention -1.23 s"; the attention plans when they differ."""
    step = nemo["step_s"]
    deltas = [(best["time"][k] - nemo["time"][k], k) for k in nemo["time"]]
    parts = ["%s %+.2f s" % (PART_NAMES.get(k, k), d) for d, k in sorted(deltas)
             if abs(d) > 0.01 * step]
    if best["attention_plan"] != nemo["attention_plan"]:
        parts.append("attention as " + best["attention_plan"])
    return "; ".join(parts) if parts else "within 1% in every part"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    parser.add_argument("--csv", default=os.path.join(ROOT, "bench", "published", "nemo_step.csv"))
    parser.add_argument("--json", help="write the rows and the summary as JSON to this file")
    parser.add_argument("--max-median", type=float, help="fail (exit 1) above this median |error|")
    parser.add_argument("--max-worst", type=float, help="fail (exit 1) when a row's |error| is above")
    parser.add_argument("--require-ordered", action="store_true",
                        help="fail (exit 1) when a measured CP speedup over 1.05 is predicted as "
                             "none, or meshplan's search is slower than a NeMo configuration "
                             "that fits")
    args = parser.parse_args()
    try:
        rows = read_rows(args.meshplan, args.csv)
    except InputError as e:
        fail(str(e))
    out = []
    print("| row | TP x PP x DP x CP | measured | predicted | error | attention | GEMMs | "
          "element-wise | TP comm | bubble | plan |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    searched = []
    for row in rows:
        cmd, step = run_row(args.meshplan, row)
        _, best = run_row(args.meshplan, row, "any")
        _, no_cp = run_row(args.meshplan, row, "no-cp")
        searched.append((row, step, best["configurations"][0], no_cp["configurations"][0]))
        measured = float(row["model_tflops_per_gpu"])
        predicted = step["model_tflops_per_gpu"]
        error = predicted / measured - 1
        t = step["time"]
        share = {k: t[k] / step["step_s"] for k in t}
        out.append({"id": row["id"], "measured": measured, "predicted": predicted, "error": error,
                    "command": " ".join(shlex.quote(c) for c in cmd[1:]), "time": t})
        print("| %s | %s x %s x %s x %s | %.0f | %.0f | %+.1f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | "
              "%.0f%% | %s |" % (row["id"].split(".")[-1], row["tp"], row["pp"], row["dp"], row["cp"],
                                 measured, predicted, 100 * error, 100 * share["attention_s"],
                                 100 * share["gemm_s"], 100 * share["elementwise_s"],
                                 100 * share["tp_comm_s"], 100 * share["pp_bubble_s"],
                                 step["attention_plan"]))
    print()
    print("| row | measured speedup (CP / no CP) | predicted (NeMo's CP / best without CP) | "
          "ordered | meshplan's best TP x CP x DP x PP | its TFLOP/s | >= NeMo's | why it differs "
          "(its step's parts less NeMo's configuration's) |")
    print("|---|---|---|---|---|---|---|---|")
    misordered, slower = 0, 0
    for row, step, best, no_cp in searched:
        measured = float(row["model_tflops_per_gpu"]) / float(row["without_cp_tflops_per_gpu"])
        predicted = step["model_tflops_per_gpu"] / no_cp["model_tflops_per_gpu"]
        ordered = measured <= 1.05 or predicted > 1
        misordered += not ordered
        # NeMo's configuration runs as given (no recompute); where meshplan's memory model says it
        # does not fit, the search (which keeps to what fits) is not compared with it.
        at_least = best["model_tflops_per_gpu"] >= step["model_tflops_per_gpu"] * (1 - 1e-9)
        slower += step["fits"] and not at_least
        same = all(str(best[k]) == row[k] for k in ("tp", "cp", "dp", "pp"))
        why = "the same" if same else why_faster(step, run_row(args.meshplan, row, degrees=best)[1])
        print("| %s | %.2f | %.2f | %s | %d x %d x %d x %d (%s) | %.0f | %s | %s |" % (
            row["id"].split(".")[-1], measured, predicted, "yes" if ordered else "NO",
            best["tp"], best["cp"], best["dp"], best["pp"], best["recompute"],
            best["model_tflops_per_gpu"],
            "yes" if at_least else ("NO" if step["fits"] else "n/a: NeMo's does not fit here"),
            why))
    errors = [abs(r["error"]) for r in out]
    median, worst = statistics.median(errors), max(errors)
    print()
    print("median |error| %.1f%%, max %.1f%% over %d rows (model TFLOP/s per GPU, Megatron's count); "
          "speedup misordered in %d rows; meshplan's search slower than NeMo's configuration in %d"
          % (100 * median, 100 * worst, len(out), misordered, slower))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": out, "median": median, "max": worst}, f, indent=1)
    if args.max_median is not None and median > args.max_median:
        print("published_step: median |error| %.3f exceeds %.3f" % (median, args.max_median),
              file=sys.stderr)
        return 1
    if args.max_worst is not None and worst > args.max_worst:
        print("published_step: max |error| %.3f exceeds %.3f" % (worst, args.max_worst),
              file=sys.stderr)
        return 1
    if args.require_ordered and (misordered or slower):
        print("published_step: %d speedups misordered, %d searches slower than NeMo's" %
              (misordered, slower), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
