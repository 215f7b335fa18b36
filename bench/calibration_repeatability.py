#!/usr/bin/env python3
"""Do calibrations of one machine agree with each other? (issue 48 item 2)

For each rank count P and head dim d: `meshplan calibrate --ranks P --head-dim d` N times in a row
(full calibrations unless --quick), then every plan of workloads like bench/fidelity.py's (2K
tokens and 2 query heads per rank, P KV heads, so that every scheme splits them at P = 3 as at
4: 6K tokens, 6:3 heads at P = 3; fp32, masks full and causal, passes fwd and fwd+bwd, every
scheme variant that `plan --all-variants` lists) predicted with each calibration. A plan's spread is
max / min - 1 of its N predictions; the target is 5% for every plan.

Beside the spread it prints what each calibration fitted (peak, the efficiency curve's ends, the
backward and merge rates, how ranks share the device, messages, the lag) and what other processes
took while it measured (`[calibration] other_processes_cores`, the disturbance meter), so a
calibration that moved can be traced to the value that moved and to whether it was disturbed.

Each calibration also records the machine's speed (`[calibration] reference_block_us`: one
512-token block timed around every phase; `speed_spread`: how far it moved meanwhile). The second
spread is of the predictions brought to one speed, each scaled by the median reference time over
its own: what `execute` compares when it times the block again around its runs. Where the machine
itself drifted between calibrations, the first spread has it and the second does not.

With --draws N each calibration is `calibrate --draws N`: the median of N calibrations, each in a
process of its own, with the range their own predictions took (`[calibration] draw_range`),
printed beside it.

Usage: python3 bench/calibration_repeatability.py [--ranks 3,4] [--head-dims 32,128]
       [--calibrations 5] [--draws N] [--quick] [--out DIR] [--meshplan PATH]
Writes DIR/cal-P-dD-I.toml and DIR/repeatability.md. Needs a quiet machine: every calibration
says how busy it found it.
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"calibration_repeatability: {' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def fitted(path):
    """The values a calibration fitted, as short printable fields."""
    with open(path, "rb") as f:
        t = tomllib.load(f)
    g = t["gpu"]
    level = t["level"][0]
    eff = g.get("attention_efficiency", [])
    cal = t.get("calibration", {})
    return {
        "peak_tflops": g["peak_tflops"].get("fp32"),
        "eff_first": eff[0][1] if eff else None,
        "eff_last": eff[-1][1] if eff else None,
        "backward_ratio": g.get("backward_rate_ratio"),
        "hbm_GBps": g.get("hbm_GBps"),
        "concurrent": g.get("concurrent_kernels"),
        "sharing": g.get("sharing"),
        "lag_us": g.get("sharing_end_lag_us"),
        "lag_fraction": g.get("sharing_end_lag_fraction"),
        "msg_us": level.get("latency_us"),
        "msg_GBps": level.get("bandwidth_GBps"),
        "other_cores": cal.get("other_processes_cores"),
        "reference_us": cal.get("reference_block_us"),
        "speed_spread": cal.get("speed_spread"),
        "draw_range": cal.get("draw_range"),
    }


def at_one_speed(preds, references_us):
    """Each calibration's predictions scaled to the median reference time: prediction x
    median / its own reference (a calibration that timed the block 10% slow predicts 10% slow).
    Unchanged where any reference is missing."""
    if not preds or any(r is None or r <= 0 for r in references_us):
        return preds
    common = statistics.median(references_us)
    return [{k: v * common / ref for k, v in p.items()} for p, ref in zip(preds, references_us)]


def predictions(meshplan, topo, ranks, head_dim):
    """(workload, scheme, parameters) -> predicted seconds, every plan of the workloads at P."""
    out = {}
    for mask in ("full", "causal"):
        for pass_ in ("fwd", "fwd+bwd"):
            text = run([meshplan, "plan", "-t", topo, "--seq", str(2048 * ranks), "--heads",
                        str(2 * ranks), "--kv-heads", str(ranks),
                        "--head-dim", str(head_dim), "--dtype", "fp32", "--mask", mask,
                        "--pass", pass_, "--format", "csv", "--top", "0", "--all-variants", "-q"])
            for row in csv.DictReader(io.StringIO(text)):
                if not row.get("scheme") or row.get("time_s") in (None, ""):
                    continue
                out[(f"{mask} {pass_}", row["scheme"], row["parameters"])] = float(row["time_s"])
    return out


def spreads_of(preds):
    """[(max / min - 1, key, values)] over the keys every calibration predicted, largest first."""
    keys = set(preds[0]) if preds else set()
    for p in preds[1:]:
        keys &= set(p)
    spreads = []
    for k in sorted(keys):
        values = [p[k] for p in preds]
        spreads.append((max(values) / min(values) - 1.0, k, values))
    spreads.sort(reverse=True)
    return spreads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    ap.add_argument("--ranks", default="3,4")
    ap.add_argument("--head-dims", default="32,128")
    ap.add_argument("--calibrations", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="calibrate --quick")
    ap.add_argument("--draws", type=int, default=1, help="calibrate --draws N")
    ap.add_argument("--out", default="repeatability-out")
    ap.add_argument("--target", type=float, default=0.05, help="largest spread allowed")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = ["| P | d | calibration | s | peak | eff (first, last) | bwd | merges GB/s | "
             "concurrent | lag us + fraction | messages us, GB/s | other cores | reference us "
             "(moved) | draw range |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = []
    worst_overall = 0.0
    for ranks in [int(x) for x in args.ranks.split(",")]:
        for head_dim in [int(x) for x in args.head_dims.split(",")]:
            preds = []
            references = []
            for i in range(args.calibrations):
                path = os.path.join(args.out, f"cal-{ranks}-d{head_dim}-{i}.toml")
                cmd = [args.meshplan, "calibrate", "--ranks", str(ranks), "--head-dim",
                       str(head_dim), "-o", path, "-q", "--force"]
                if args.quick:
                    cmd.append("--quick")
                if args.draws > 1:
                    cmd += ["--draws", str(args.draws)]
                start = time.monotonic()
                run(cmd)
                wall = time.monotonic() - start
                f = fitted(path)
                lines.append(
                    f"| {ranks} | {head_dim} | {i} | {wall:.0f} | {f['peak_tflops']} | "
                    f"{f['eff_first']}, {f['eff_last']} | {f['backward_ratio']} | {f['hbm_GBps']} | "
                    f"{f['concurrent']} {f['sharing']} | {f['lag_us']} + {f['lag_fraction']} | "
                    f"{f['msg_us']}, {f['msg_GBps']} | {f['other_cores']} | "
                    f"{f['reference_us']} ({f['speed_spread']}) | "
                    f"{'-'.join(str(x) for x in f['draw_range']) if f['draw_range'] else '-'} |")
                preds.append(predictions(args.meshplan, path, ranks, head_dim))
                references.append(f["reference_us"])
                print(lines[-1], flush=True)
            spreads = spreads_of(preds)
            worst = spreads[0][0] if spreads else 0.0
            over = sum(1 for s in spreads if s[0] > args.target)
            median = statistics.median(s[0] for s in spreads) if spreads else 0.0
            steady = spreads_of(at_one_speed(preds, references))
            steady_worst = steady[0][0] if steady else 0.0
            steady_median = statistics.median(s[0] for s in steady) if steady else 0.0
            worst_overall = max(worst_overall, steady_worst)
            summary.append(
                f"| {ranks} | {head_dim} | {len(spreads)} | {100 * median:.1f}% | "
                f"{100 * worst:.1f}% | {over} | {100 * steady_median:.1f}% | "
                f"{100 * steady_worst:.1f}% | {spreads[0][1][0]} {spreads[0][1][1]} "
                f"{spreads[0][1][2]}: " +
                ", ".join(f"{1e3 * v:.1f}" for v in spreads[0][2]) + " ms |")
            print(summary[-1], flush=True)
    text = ("# Calibration repeatability\n\n"
            f"`python3 bench/calibration_repeatability.py --ranks {args.ranks} --head-dims "
            f"{args.head_dims} --calibrations {args.calibrations}"
            f"{' --draws ' + str(args.draws) if args.draws > 1 else ''}"
            f"{' --quick' if args.quick else ''}`\n\n"
            "## What each calibration fitted\n\n" + "\n".join(lines) +
            "\n\n## Spread of the predictions (max / min - 1 over the calibrations)\n\n"
            "| P | d | plans | median spread | largest | over target | median at one speed | "
            "largest at one speed | largest: plan, its predictions |\n"
            "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(summary) +
            f"\n\nLargest spread at one speed {100 * worst_overall:.1f}% "
            f"(target {100 * args.target:.0f}%).\n")
    with open(os.path.join(args.out, "repeatability.md"), "w") as f:
        f.write(text)
    print(f"largest spread at one speed {100 * worst_overall:.1f}% "
          f"(target {100 * args.target:.0f}%)")
    return 0 if worst_overall <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
