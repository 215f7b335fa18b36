#!/usr/bin/env python3
"""Single-GPU attention kernel benchmarks against the GPU catalog's curves (issue 46 items 2, 4).

The published-measurement files (bench/published/) hold, beside the context-parallel points,
single-GPU kernel benchmarks (`meshplan_scheme` = "single kernel"): MagiAttention's (MAGI-K, the
Hopper curves are fitted on them), ring-flash-attention's single-GPU column (RFA-K, RFA5-K, held
out) and FlashAttention-2's own A100 and H100 benchmark (FA2-K, kernels_fa2.csv). bench/published.py
lists them; this program predicts each one: a one-GPU cluster written by `meshplan topo new --gpu
ENTRY --gpus-per-node 1` for the catalog entry of the point's cluster, planned with the point's
shape, mask, pass and library, so the time is the kernel's alone as the catalog states it (curve,
occupancy, head-dim and causal-cut terms, backward ratio). It prints each point's measured and
predicted TFLOP/s per GPU (FlashAttention's count) and signed time error (predicted / measured - 1,
negative = predicted too fast), and the median |error| per source, GPU entry and mask.

    python3 bench/kernel_points.py [--meshplan build/tools/meshplan] [--points FILE ...]
                                   [--max-median F] [--source NAME]

Exit 1 when `--max-median F` is given and the median |error| over the points reported exceeds F;
exit 2 on a missing binary or file or a failing meshplan. Python 3.11+ standard library.
"""

import argparse
import csv
import io
import os
import shlex
import statistics
import sys
import tempfile

import published
import published_loso

DEFAULT_POINTS = [os.path.join(published.REPO, "bench", "published", name) for name in
                  ("points.csv", "heldout.csv", "heldout_rfa_5head.csv", "kernels_fa2.csv")]
# Sources whose kernel rows name no cluster: the cluster their own context-parallel points ran on.
SOURCE_CLUSTER = {"MAGI-K": "dgx-h100-1node"}


def point_cluster(point):
    cluster = (point.get("cluster") or "").strip() or SOURCE_CLUSTER.get(point["source"], "")
    if not cluster:
        raise published.SuiteError(f"point {point['id']}: no cluster column and none known for "
                                   f"source {point['source']}")
    return cluster


def one_gpu_file(meshplan, entry, directory):
    """A one-GPU cluster file for catalog `entry`, written by `meshplan topo new`."""
    path = os.path.join(directory, entry + ".toml")
    if not os.path.exists(path):
        published.run_meshplan([meshplan, "topo", "new", "--gpu", entry, "--gpus-per-node", "1",
                                "-q", "-o", path])
    return path


def predicted_seconds(meshplan, point, topology):
    """The kernel's time on one GPU as planned by meshplan (its estimate)."""
    cmd = [meshplan, "plan", "-t", topology, "--seq", str(point["seq_tokens"]),
           "--batch", str(point["batch"]), "--heads", str(point["q_heads"]),
           "--kv-heads", str(point["kv_heads"]), "--head-dim", str(point["head_dim"]),
           "--mask", point["mask"], "--pass", point["pass"],
           "--attention-kernel", point["library"], "--format", "csv", "--top", "1", "-q"]
    rows = list(csv.DictReader(io.StringIO(published.run_meshplan(cmd))))
    try:
        return float(rows[0]["time_s"])
    except (IndexError, KeyError, ValueError) as e:
        raise published.SuiteError(f"point {point['id']}: no plan time in meshplan's output "
                                   f"({e!r}): {shlex.join(cmd)}") from e


def evaluate(meshplan, points):
    records = []
    with tempfile.TemporaryDirectory(prefix="meshplan_kernels_") as tmp:
        for p in points:
            entry = published_loso.catalog_entry(point_cluster(p))
            if not entry:
                raise published.SuiteError(f"point {p['id']}: cluster {point_cluster(p)} names "
                                           "no GPU catalog entry")
            measured = published.measured_seconds(p)
            predicted = predicted_seconds(meshplan, p, one_gpu_file(meshplan, entry, tmp))
            flops = published.fa_flops_per_gpu(p)
            records.append({"id": p["id"], "source": p["source"], "entry": entry,
                            "mask": p["mask"], "pass": p["pass"],
                            "measured_tflops": flops / measured / 1e12,
                            "predicted_tflops": flops / predicted / 1e12,
                            "error": predicted / measured - 1})
    return records


def render(records):
    out = ["| point | entry | measured TFLOP/s | predicted TFLOP/s | time error |",
           "|---|---|---|---|---|"]
    for r in records:
        out.append(f"| {r['id']} | {r['entry']} | {r['measured_tflops']:.1f} | "
                   f"{r['predicted_tflops']:.1f} | {r['error']:+.1%} |")
    out += ["", "| source | entry | mask | points | median abs | max abs | signed median |",
            "|---|---|---|---|---|---|---|"]
    groups = {}
    for r in records:
        groups.setdefault((r["source"], r["entry"], r["mask"]), []).append(r["error"])
    for (source, entry, mask), errors in groups.items():
        out.append(f"| {source} | {entry} | {mask} | {len(errors)} | "
                   f"{statistics.median(abs(e) for e in errors):.1%} | "
                   f"{max(abs(e) for e in errors):.1%} | {statistics.median(errors):+.1%} |")
    overall = [abs(r["error"]) for r in records]
    out.append(f"| all | | | {len(overall)} | {statistics.median(overall):.1%} | "
               f"{max(overall):.1%} | |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshplan", default=published.DEFAULT_MESHPLAN)
    ap.add_argument("--points", nargs="+", default=DEFAULT_POINTS)
    ap.add_argument("--source", action="append", help="only this source's points (repeatable)")
    ap.add_argument("--max-median", type=float)
    args = ap.parse_args()
    try:
        published.check_meshplan(args.meshplan)
        points = [p for path in args.points for p in published.load_points(path)
                  if published.is_kernel_point(p)
                  and (not args.source or p["source"] in args.source)]
        if not points:
            raise published.SuiteError("no kernel points in " + ", ".join(args.points))
        records = evaluate(args.meshplan, points)
    except published.SuiteError as e:
        print(f"kernel_points: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(render(records))
    median = statistics.median(abs(r["error"]) for r in records)
    if args.max_median is not None and median > args.max_median:
        print(f"kernel_points: median |error| {median:.1%} exceeds {args.max_median:.1%}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
