#!/usr/bin/env python3
"""Planner estimate against the simulator's replay, for the best plan of every scheme.

For each shipped cluster and workload below: `meshplan plan --schemes S --simulate 1 --top 1
--format csv` per scheme (the best plan, replayed), and the signed difference of the simulated
time from the estimate. Prints a Markdown table (docs/simulator.md, "Simulated vs estimated") and
a summary line; exits 1 when a difference exceeds --bound (default 10%). Usage:

    python3 bench/estimate_agreement.py [--meshplan build/tools/meshplan] [--bound 0.10]
"""
import argparse
import csv
import io
import subprocess
import sys

CLUSTERS = ["dgx-h100-4node", "hgx-h200-32gpu", "dgx-a100-16node", "dgx-h100-32node",
            "a100-16node-4gpu", "h100-64node-1gpu"]
WORKLOADS = [("GQA fwd+bwd", ["--heads", "64", "--kv-heads", "8", "--pass", "fwd+bwd"]),
             ("MHA fwd", ["--heads", "32", "--kv-heads", "32", "--pass", "fwd"])]


def schemes(meshplan):
    """The registry's schemes, in its order: the first word of each `plan --list-schemes` line."""
    text = subprocess.run([meshplan, "plan", "--list-schemes"], check=True, capture_output=True,
                          text=True).stdout
    return [line.split()[0] for line in text.splitlines() if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshplan", default="build/tools/meshplan")
    parser.add_argument("--bound", type=float, default=0.10)
    parser.add_argument("--seq", default="256K")
    args = parser.parse_args()
    worst = 0.0
    rows = 0
    print("| topology | workload | scheme | plan | estimated | simulated | difference |")
    print("|---|---|---|---|---|---|---|")
    for cluster in CLUSTERS:
        for name, flags in WORKLOADS:
            for scheme in schemes(args.meshplan):
                cmd = [args.meshplan, "plan", "-t", cluster, "--seq", args.seq, "--head-dim", "128", "--mask",
                       "causal", "--schemes", scheme, "--simulate", "1", "--top", "1", "--format", "csv", "-q"] + flags
                run = subprocess.run(cmd, capture_output=True, text=True)
                table = list(csv.DictReader(io.StringIO(run.stdout))) if run.returncode == 0 else []
                if not table:
                    print(f"| {cluster} | {name} | {scheme} | no valid plan | | | |")
                    continue
                row = table[0]
                est, sim = float(row["time_s"]), float(row["simulated_s"])
                diff = sim / est - 1
                worst = max(worst, abs(diff))
                rows += 1
                print(f"| {cluster} | {name} | {scheme} | {row['parameters']} | {est*1e3:.3f} ms | {sim*1e3:.3f} ms "
                      f"| {diff*100:+.1f}% |")
    print(f"\n{rows} plans; largest |simulated / estimated - 1|: {worst*100:.1f}% (bound {args.bound*100:.0f}%)")
    return 0 if worst <= args.bound else 1


if __name__ == "__main__":
    sys.exit(main())
