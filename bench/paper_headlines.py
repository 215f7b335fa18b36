#!/usr/bin/env python3
"""The seed papers' headline figures next to meshplan's on the closest shipped configuration.

Runs `meshplan plan --format csv` for each configuration and compares each scheme's best plan
(the first row of that scheme: plans are ranked fits-first, then by time) with the baseline's
best plan: speedup = baseline time / scheme time, and the bytes each GPU sends. Prints Markdown
tables (docs/papers.md quotes them). Usage:

    python3 bench/paper_headlines.py [--meshplan build/tools/meshplan]
"""
import argparse
import csv
import io
import statistics
import subprocess
import sys

# Mesh-Attention (arXiv 2512.20968), abstract: on 256 GPUs, up to 3.4x (2.9x on average) over
# Ring-Attention, and up to 85.4% (79.0% on average) less communication volume. The model and
# lengths are not in the abstract: an MHA layer (32 heads of 128, bf16) at 256K-2M tokens on the
# shipped 256-GPU DGX H100 cluster, both masks and both passes.
MESH_CONFIGS = [
    {"seq": seq, "mask": mask, "pass": p}
    for seq in ("256K", "512K", "1M", "2M")
    for mask in ("full", "causal")
    for p in ("fwd", "fwd+bwd")
]

# ATTENTION2D (arXiv 2503.15758): 5x over Ring on 64 A100 (16 nodes of 4) and 9.4x on 64 H100
# (64 nodes of 1), GPT-3-like (96 heads of 128, MHA).
A2D_CLUSTERS = [("a100-16node-4gpu", "5x"), ("h100-64node-1gpu", "9.4x")]
A2D_SEQS = ("8K", "32K", "128K", "512K")


def plan_rows(meshplan, topology, seq, heads, kv_heads, mask, pass_, schemes):
    cmd = [meshplan, "plan", "-t", topology, "--seq", seq, "--heads", str(heads), "--kv-heads", str(kv_heads),
           "--head-dim", "128", "--mask", mask, "--pass", pass_, "--schemes", ",".join(schemes),
           "--format", "csv", "--top", "0", "--all-variants", "-q"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    best = {}
    for row in csv.DictReader(io.StringIO(out)):
        if row["scheme"] not in best:
            best[row["scheme"]] = row
    return best, " ".join(cmd[1:])


def known_schemes(meshplan):
    """The registry's schemes: the first word of each `meshplan plan --list-schemes` line."""
    text = subprocess.run([meshplan, "plan", "--list-schemes"], check=True, capture_output=True,
                          text=True).stdout
    return set(line.split()[0] for line in text.splitlines() if line.strip())


def mesh_table(meshplan):
    print("### Mesh-Attention vs Ring on 256 GPUs (dgx-h100-32node, MHA 32 x 128, bf16)\n")
    print("| seq | mask | pass | ring | mesh | speedup | ring bytes/GPU | mesh bytes/GPU | less volume |")
    print("|---|---|---|---|---|---|---|---|---|")
    speedups, savings = [], []
    for c in MESH_CONFIGS:
        best, _ = plan_rows(meshplan, "dgx-h100-32node", c["seq"], 32, 32, c["mask"], c["pass"], ["ring", "mesh"])
        ring, mesh = best["ring"], best["mesh"]
        speedup = float(ring["time_s"]) / float(mesh["time_s"])
        saving = 1 - float(mesh["bytes_per_gpu"]) / float(ring["bytes_per_gpu"])
        speedups.append(speedup)
        savings.append(saving)
        print(f"| {c['seq']} | {c['mask']} | {c['pass']} | {ring['parameters']} {float(ring['time_s'])*1e3:.1f} ms "
              f"| {mesh['parameters']} {float(mesh['time_s'])*1e3:.1f} ms | {speedup:.2f}x "
              f"| {float(ring['bytes_per_gpu'])/2**30:.2f} GiB | {float(mesh['bytes_per_gpu'])/2**30:.2f} GiB "
              f"| {saving*100:.1f}% |")
    print(f"\nspeedup: max {max(speedups):.2f}x, mean {statistics.mean(speedups):.2f}x (paper: 3.4x, 2.9x); "
          f"less volume: max {max(savings)*100:.1f}%, mean {statistics.mean(savings)*100:.1f}% "
          f"(paper: 85.4%, 79.0%)\n")


def ring_scaling_table(meshplan):
    print("### Bytes per GPU as the cluster grows (MHA 32 x 128, 256K tokens, forward)\n")
    print("| cluster | GPUs | ring | ring bytes/GPU | mesh | mesh bytes/GPU |")
    print("|---|---|---|---|---|---|")
    for cluster, gpus in (("dgx-h100-4node", 32), ("dgx-h100-32node", 256), ("dgx-h100-128node", 1024)):
        best, _ = plan_rows(meshplan, cluster, "256K", 32, 32, "full", "fwd", ["ring", "mesh"])
        ring, mesh = best["ring"], best["mesh"]
        print(f"| {cluster} | {gpus} | {ring['parameters']} | {float(ring['bytes_per_gpu'])/2**30:.2f} GiB "
              f"| {mesh['parameters']} | {float(mesh['bytes_per_gpu'])/2**30:.2f} GiB |")
    print()


def a2d_table(meshplan, schemes):
    contenders = [s for s in ("attention2d", "attention2d-o") if s in schemes]
    print("### ATTENTION2D vs Ring, 64 GPUs, GPT-3-like (MHA 96 x 128, bf16, causal, fwd+bwd)\n")
    print("| cluster | paper | seq | ring (best) | " + " | ".join(contenders) + " |")
    print("|---|---|---|---|" + "---|" * len(contenders))
    for cluster, paper in A2D_CLUSTERS:
        for seq in A2D_SEQS:
            best, _ = plan_rows(meshplan, cluster, seq, 96, 96, "causal", "fwd+bwd", ["ring"] + contenders)
            ring = best["ring"]
            cells = []
            for s in contenders:
                row = best.get(s)
                cells.append("-" if row is None else
                             f"{row['parameters']} {float(ring['time_s'])/float(row['time_s']):.2f}x")
            print(f"| {cluster} | {paper} | {seq} | {ring['parameters']} {float(ring['time_s'])*1e3:.1f} ms | "
                  + " | ".join(cells) + " |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshplan", default="build/tools/meshplan")
    args = parser.parse_args()
    try:
        schemes = known_schemes(args.meshplan)
        ring_scaling_table(args.meshplan)
        mesh_table(args.meshplan)
        a2d_table(args.meshplan, schemes)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"paper_headlines: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
