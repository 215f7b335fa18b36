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
about +-5 TFLOP/s); their ratio is the measured gap. The documents are drawn as the benchmark
draws them, from its own dataset histogram (bench/magi_packs.py), each padded to 2 x CP as THD
pads them, and the TFLOP/s are counted as it counts them (the documents' causal area).

The benchmark ran those backends with FlashAttention-3 kernels on Hopper (MagiAttention 2c64135,
exps/dist_attn/benchmark_conf.py: `attn_backend = AttnBackend.FA3  # for Hopper`; the p2p ring is
exps/dist_attn/baselines/ring_attn.py FA3RingAttnFunc, the all-gather FA3RingAGAttnFunc), so the
plans are timed with fa3, as bench/published.py times each point with the library its source ran
(`--attention-kernel` picks another: cudnn is what `--framework megatron` alone would time).

Usage: python3 bench/packed_documents.py [--meshplan build/tools/meshplan] [--attention-kernel K]
Prints, per GPU count and pass, each backend's TFLOP/s per GPU predicted (the mean over the
packs) and measured, and the all_gather/p2p ratio (the gap: the target is within a factor of
1.3); then meshplan's best plan over every scheme beside the benchmark's own method and its
Ulysses baseline on the same packs (what the packs allow; docs/schemes.md reads it).
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile

import magi_packs

# (GPUs, pass) -> (p2p, all_gather) TFLOP/s per GPU, read off the figures.
MEASURED = {
    (8, "fwd"): (89, 289), (16, "fwd"): (69, 292), (32, "fwd"): (47, 240), (64, "fwd"): (28, 180),
    (8, "bwd"): (97, 179), (16, "bwd"): (86, 155), (32, "bwd"): (57, 104), (64, "bwd"): (29, 55),
}
# The same figures' other bars (read the same way, +-5): MagiAttention's own method
# (magi_attn-native: balanced dispatch, its FFA kernel) and the benchmark's Ulysses baseline
# (FlashAttention-3 over the whole sequence, KV heads repeated past 8 GPUs). Not predicted as
# such: beside meshplan's best plan over every scheme they say what the packs allow.
MEASURED_OTHERS = {
    (8, "fwd"): (459, 278), (16, "fwd"): (426, 199), (32, "fwd"): (315, 186), (64, "fwd"): (237, 163),
    (8, "bwd"): (360, 332), (16, "bwd"): (371, 294), (32, "bwd"): (333, 276), (64, "bwd"): (264, 248),
}
# A cluster of at least that many H100s, and the data-parallel replicas that leave CP = GPUs.
CLUSTER = {8: ("dgx-h100-1node", 1), 16: ("dgx-h100-4node", 2), 32: ("dgx-h100-4node", 1),
           64: ("dgx-h100-8node", 1)}


def best_time(rows, scheme):
    times = [float(r["time_s"]) for r in rows if r["scheme"] == scheme]
    if not times:
        raise SystemExit(f"packed_documents: no {scheme} plan Megatron runs")
    return min(times)


def plan_rows(args, gpus, pass_, documents, workdir, restrict):
    """Every plan's CSV row on one pack: Megatron's p2p and all_gather (restrict) or every scheme."""
    topology, dp = CLUSTER[gpus]
    path = os.path.join(workdir, f"docs-{gpus}.txt")
    with open(path, "w") as f:
        f.write("\n".join(str(d) for d in documents) + "\n")
    cmd = [args.meshplan, "plan", "-t", topology, "--dp", str(dp), "--seq", str(sum(documents)),
           "--heads", "64", "--kv-heads", "8", "--head-dim", "128", "--pass", pass_,
           "--mask", f"docs:{path}", "--attention-kernel", args.attention_kernel, "--format",
           "csv", "--top", "0", "--all-variants", "-q"]
    if restrict:
        cmd += ["--schemes", "ring,allgather-kv", "--framework", "megatron"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"packed_documents: {' '.join(cmd)}: {run.stderr.strip()}")
    return [r for r in csv.DictReader(io.StringIO(run.stdout)) if r.get("scheme")]


def predict(args, gpus, pass_, documents, workdir):
    """Predicted seconds of the best p2p (ring) and all_gather (allgather-kv) plan on one pack."""
    rows = plan_rows(args, gpus, pass_, documents, workdir, True)
    return best_time(rows, "ring"), best_time(rows, "allgather-kv")


def predict_best(args, gpus, pass_, documents, workdir):
    """Seconds and name of meshplan's best plan over every scheme on one pack."""
    rows = plan_rows(args, gpus, pass_, documents, workdir, False)
    best = min(rows, key=lambda r: float(r["time_s"]))
    return float(best["time_s"]), f"{best['scheme']} {best['parameters']}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshplan", default="build/tools/meshplan")
    ap.add_argument("--attention-kernel", default="fa3",
                    help="the library to time (default fa3, what the benchmark ran)")
    ap.add_argument("--packs", type=int, default=8, help="packs per point (default 8)")
    args = ap.parse_args()
    rows, others = [], []
    with tempfile.TemporaryDirectory() as workdir:
        for (gpus, pass_), (p2p, gather) in sorted(MEASURED.items(),
                                                   key=lambda x: (x[0][1], x[0][0])):
            predicted = {"p2p": [], "all_gather": [], "best": []}
            best_names = []
            for pack in magi_packs.packs(8192 * gpus, args.packs):
                # FLOPs per GPU as the benchmark counts them (exps/dist_attn/benchmark/metric.py:
                # 4 x area x heads x d forward, 2.5x that backward), on the unpadded documents.
                flops = 4.0 * magi_packs.causal_area(pack) * 64 * 128 / gpus
                flops *= 2.5 if pass_ == "bwd" else 1.0
                ring_s, gather_s = predict(args, gpus, pass_,
                                           magi_packs.padded(pack, 2 * gpus), workdir)
                predicted["p2p"].append(flops / ring_s / 1e12)
                predicted["all_gather"].append(flops / gather_s / 1e12)
                best_s, best_name = predict_best(args, gpus, pass_,
                                                 magi_packs.padded(pack, 2 * gpus), workdir)
                predicted["best"].append(flops / best_s / 1e12)
                best_names.append(best_name)
            rows.append((gpus, pass_, p2p, gather, statistics.mean(predicted["p2p"]),
                         statistics.mean(predicted["all_gather"])))
            others.append((gpus, pass_, statistics.mean(predicted["best"]),
                           max(set(best_names), key=best_names.count)))
    print(f"TFLOP/s per GPU, mean over {args.packs} packs, {args.attention_kernel}:\n")
    print("| GPUs | pass | p2p: predicted / measured | all_gather: predicted / measured | "
          "gap (all_gather / p2p): predicted / measured |")
    print("|---|---|---|---|---|")
    errors, worst = [], 1.0
    for gpus, pass_, p2p, gather, p2p_pred, gather_pred in rows:
        gap_ratio = (gather_pred / p2p_pred) / (gather / p2p)
        worst = max(worst, gap_ratio, 1 / gap_ratio)
        # Error in time: measured rate / predicted rate - 1 (negative: predicted too fast).
        errors += [p2p / p2p_pred - 1, gather / gather_pred - 1]
        print(f"| {gpus} | {pass_} | {p2p_pred:.0f} / {p2p} ({p2p / p2p_pred - 1:+.1%}) | "
              f"{gather_pred:.0f} / {gather} ({gather / gather_pred - 1:+.1%}) | "
              f"{gather_pred / p2p_pred:.2f} / {gather / p2p:.2f} ({gap_ratio:.2f}) |")
    median = statistics.median(abs(e) for e in errors)
    print(f"\nmedian |time error| {median:.1%} over {len(errors)} points, largest "
          f"{max(abs(e) for e in errors):.1%}; worst factor between the predicted and the "
          f"measured gap: {worst:.2f} (target <= 1.3)")
    print("\nWhat the packs allow: meshplan's best plan over every scheme (no framework), against "
          "the same benchmark's own method and its Ulysses baseline (measured, not predicted as "
          "such):\n")
    print("| GPUs | pass | meshplan's best: plan (most packs) | its TFLOP/s | magi_attn-native "
          "| its / best | Ulysses baseline | its / best |")
    print("|---|---|---|---|---|---|---|---|")
    for gpus, pass_, best, name in others:
        native, ulysses = MEASURED_OTHERS[(gpus, pass_)]
        print(f"| {gpus} | {pass_} | {name} | {best:.0f} | {native} | {native / best:.2f} | "
              f"{ulysses} | {ulysses / best:.2f} |")


if __name__ == "__main__":
    main()
