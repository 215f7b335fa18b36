#!/usr/bin/env python3
"""The gap between TransformerEngine's p2p ring and its all_gather on packed documents, predicted
beside the gap a published benchmark measured (issue 46 item 5's check; nothing fitted on it).

MagiAttention's CP benchmark (SandAI-org/MagiAttention 2c64135, docs/source/blog/cp_benchmark.md,
figures assets/magi_attn/exp/distributed/h100/varlen_causal_mask/{fwd,bwd}/flops_report.png)
runs Megatron-LM's context-parallel backends on H100s with 8K tokens per GPU, 64:8 heads of 128,
causal attention inside documents packed from a dataset's lengths (its figure
varlen_seqlen_distribution.png: median near 600 tokens, a long tail). Megatron runs packed
documents in TransformerEngine's THD format, each document padded to 2 x CP and split in 2 x CP
chunks: meshplan's doc-zigzag layout. The TFLOP/s per GPU below are read off the figures (to
about +-5 TFLOP/s); their ratio is the measured gap. meshplan's documents are drawn from a
log-normal with median 600 and sigma 1.2 (read off the histogram, not fitted to any speed).

Usage: python3 bench/packed_documents.py [--meshplan build/tools/meshplan]
Prints, per GPU count and pass, the predicted and measured all_gather/p2p speed ratio and their
quotient (the target: within a factor of 1.3).
"""
import argparse
import csv
import io
import subprocess
import sys

# (GPUs, pass) -> (p2p, all_gather) TFLOP/s per GPU, read off the figures.
MEASURED = {
    (8, "fwd"): (89, 289), (16, "fwd"): (69, 292), (32, "fwd"): (47, 240), (64, "fwd"): (28, 180),
    (8, "bwd"): (97, 179), (16, "bwd"): (86, 155), (32, "bwd"): (57, 104), (64, "bwd"): (29, 55),
}
# A cluster of at least that many H100s, and the data-parallel replicas that leave CP = GPUs.
CLUSTER = {8: ("dgx-h100-1node", 1), 16: ("dgx-h100-4node", 2), 32: ("dgx-h100-4node", 1),
           64: ("dgx-h100-8node", 1)}


def best_time(rows, scheme):
    times = [float(r["time_s"]) for r in rows if r["scheme"] == scheme]
    if not times:
        raise SystemExit(f"packed_documents: no {scheme} plan Megatron runs")
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshplan", default="build/tools/meshplan")
    args = ap.parse_args()
    print("| GPUs | pass | predicted all_gather / p2p | measured | predicted / measured |")
    print("|---|---|---|---|---|")
    worst = 1.0
    for (gpus, pass_), (p2p, gather) in sorted(MEASURED.items(), key=lambda x: (x[0][1], x[0][0])):
        topology, dp = CLUSTER[gpus]
        seq = 8192 * gpus
        cmd = [args.meshplan, "plan", "-t", topology, "--dp", str(dp), "--seq", str(seq),
               "--heads", "64", "--kv-heads", "8", "--head-dim", "128", "--pass", pass_,
               "--mask", f"docs-sampled:lognormal:median=600:sigma=1.2:align={2 * gpus}",
               "--schemes", "ring,allgather-kv", "--framework", "megatron", "--format", "csv",
               "--top", "0", "--all-variants", "-q"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"packed_documents: {' '.join(cmd)}: {run.stderr.strip()}")
        rows = [r for r in csv.DictReader(io.StringIO(run.stdout)) if r.get("scheme")]
        predicted = best_time(rows, "ring") / best_time(rows, "allgather-kv")
        measured = gather / p2p
        ratio = predicted / measured
        worst = max(worst, ratio, 1 / ratio)
        print(f"| {gpus} | {pass_} | {predicted:.2f} | {measured:.2f} | {ratio:.2f} |")
    print(f"\nworst factor between the predicted and the measured gap: {worst:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
