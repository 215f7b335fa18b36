#!/usr/bin/env python3
"""Predicted vs measured on this machine (issue 11, docs/fidelity.md).

For each rank count P: `meshplan calibrate --ranks P` describes the machine; then for every workload
(mask full/causal x pass fwd/fwd+bwd) the best plan of each scheme variant (ring per layout, mesh and
attention2d per tile, the other schemes' best) is executed on the calibrated topology in R rounds
over the workload's plans (each `execute --repeat N`), and its simulated time is compared with the
median of its timed runs. The same plans simulated on
an H100 topology of P GPUs, scaled by one factor (the median measured/predicted), show what the
calibration buys.

Usage: python3 bench/fidelity.py [--meshplan build/tools/meshplan] [--out DIR] [--ranks 2,4,8]
       [--seq 4K[,8K...]] [--heads 8] [--kv-heads N] [--head-dim 64] [--dtype fp32]
       [--repeat 2] [--rounds 2] [--mpi-ranks 4] [--passes fwd,fwd+bwd] [--quick]
       [--calibrate-each once|workload] [--backend cpu|cuda] [--kernels auto|tensor|simt]

--backend cuda (issue 34) is the GPU table: P virtual ranks on one GPU, calibrated with
`meshplan calibrate --backend cuda` and run with `execute --backend cuda` (bf16 by default, no MPI
rows); e.g. on an H100 or H200:
  python3 bench/fidelity.py --backend cuda --ranks 8 --mpi-ranks '' --seq 16K,64K,128K \
      --heads 32 --kv-heads 8 --head-dim 128 --repeat 3 --rounds 1 --quick
Writes DIR/fidelity.md (tables and summary), DIR/fidelity.csv and the calibrated machine-P.toml files.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def variant_key(p):
    if p["scheme"] == "ring":
        return ("ring", p["layout"])
    if p["scheme"] in ("mesh", "attention2d"):
        return (p["scheme"], f"{p['tile_a']}x{p['tile_b']}")
    return (p["scheme"], "")


def h100_topology(path, ranks):
    text = open(os.path.join(ROOT, "topologies", "dgx-h100-1node.toml")).read()
    text = re.sub(r'name = "dgx-h100-1node"', f'name = "h100-{ranks}gpu"', text, count=1)
    text = re.sub(r"group_size = 8 ", f"group_size = {ranks} ", text, count=1)
    open(path, "w").write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    ap.add_argument("--out", default="fidelity-out")
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--mpi-ranks", default="4", help="P for the MPI rows ('' for none)")
    ap.add_argument("--seq", default="4K", help="sequence lengths, comma-separated: each is its own workloads")
    ap.add_argument("--heads", default="8")
    ap.add_argument("--kv-heads", default="", help="KV heads (default: --heads)")
    ap.add_argument("--dtype", default="", help="default fp32 on the cpu backend, bf16 on cuda")
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--kernels", default="auto", help="cuda: auto (cuDNN where it can), tensor or simt")
    ap.add_argument("--head-dim", default="64")
    ap.add_argument("--repeat", default="2",
                    help="timed runs per execute (after a warm-up when > 1); 1 times a process's first, cold run "
                         "(page faults of every buffer, thread start-up), which the prediction does not model: "
                         "ring zigzag causal at P = 8 ran 360-372 ms cold against 294-302 ms warm (docs/fidelity.md)")
    ap.add_argument("--rounds", default="2", help="rounds over a workload's plans; measured = median of all timed runs")
    ap.add_argument("--masks", default="full,causal")
    ap.add_argument("--passes", default="fwd,fwd+bwd")
    ap.add_argument("--quick", action="store_true", help="calibrate --quick")
    ap.add_argument("--calibrate-each", choices=["once", "workload"], default="once",
                    help="calibrate once per P (before its workloads), or again right before each workload's "
                         "runs (a machine whose speed drifts over minutes is then described as it runs)")
    args = ap.parse_args()
    mp = args.meshplan
    kv_heads = args.kv_heads or args.heads
    dtype = args.dtype or ("bf16" if args.backend == "cuda" else "fp32")
    backend = ["--backend", args.backend] + (["--kernels", args.kernels] if args.backend == "cuda" else [])
    os.makedirs(args.out, exist_ok=True)
    rows = []
    failures = []
    started = time.time()
    mpi = shutil.which("mpirun") and args.mpi_ranks and args.backend == "cpu"
    runs = [(int(p), "threads") for p in args.ranks.split(",")]
    if mpi:
        runs += [(int(p), "mpi") for p in args.mpi_ranks.split(",")]
    machines = {}

    def calibrate(ranks, machine):
        cal = [mp, "calibrate", *backend, "--ranks", str(ranks), "--head-dim", args.head_dim, "-o", machine]
        if args.backend == "cuda":
            # A GPU block reaches its rate only with the heads a plan's blocks carry (one head:
            # a peak of 83 TFLOP/s read on an H200 where the plans ran at 400+).
            # Every kernel sample in the log: the first GPU tables are read against them.
            cal += ["--heads", args.heads, "--samples"]
        if args.quick:
            cal.append("--quick")
        print(f"[{time.time() - started:6.0f} s] calibrate --ranks {ranks}", file=sys.stderr, flush=True)
        subprocess.run(cal, check=True)

    for ranks, transport in runs:
        machine = os.path.join(args.out, f"machine-{ranks}.toml")
        if ranks not in machines:
            calibrate(ranks, machine)
            machines[ranks] = machine
            h100_topology(os.path.join(args.out, f"h100-{ranks}.toml"), ranks)
        h100 = os.path.join(args.out, f"h100-{ranks}.toml")
        first_workload = True
        for seq, mask, pss in [(q, m, p) for q in args.seq.split(",") for m in args.masks.split(",")
                               for p in args.passes.split(",")]:
            if args.calibrate_each == "workload" and not first_workload:
                calibrate(ranks, machine)
            first_workload = False
            workload = ["--seq", seq, "--heads", args.heads, "--kv-heads", kv_heads, "--head-dim",
                        args.head_dim, "--dtype", dtype, "--mask", mask, "--pass", pss]
            plans = json.loads(run([mp, "plan", "-t", machine, *workload, "--format", "json", "--top", "0", "--all-variants", "-q"]))
            chosen = {}
            for p in plans["plans"]:
                # (the CPU table leaves the Ulysses-Mesh hybrid out; the GPU table has every scheme)
                if p["fits"] and (args.backend == "cuda" or p["scheme"] != "mesh-ulysses"):
                    chosen.setdefault(variant_key(p), p)
            # Every plan of the workload first, then --rounds rounds over all of them (the
            # order reversed every other round): the machine's drift over minutes then hits
            # every plan alike instead of the plans measured in a slow minute.
            entries = []
            for i, (key, p) in enumerate(sorted(chosen.items())):
                plan_file = os.path.join(args.out, f"plan-{i}.toml")
                run([mp, "plan", "-t", machine, *workload, "--pick", str(p["rank"]), "--out", plan_file, "-q"])
                label = f"{key[0]} {key[1]}".strip() + (" cache" if p["cache_forward"] else "")
                entries.append(dict(file=plan_file, label=label, times=[], predicted=None, ratios=[]))
            for rnd in range(int(args.rounds)):
                print(f"[{time.time() - started:6.0f} s] P={ranks} {transport} {seq} {mask} {pss}: round {rnd + 1}/"
                      f"{args.rounds}, {len(entries)} plans", file=sys.stderr, flush=True)
                for e in (entries if rnd % 2 == 0 else list(reversed(entries))):
                    ex = [mp, "execute", e["file"], "-t", machine, *backend, "--repeat", args.repeat, "-q",
                          "--format", "json"]
                    if transport == "mpi":
                        ex = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), *ex,
                              "--transport", "mpi"]
                    try:
                        text = run(ex)
                        j = json.loads(text)
                    except RuntimeError as err:
                        # One plan that fails to run (a first run on a new device, say) is
                        # reported and left out; the rest of the table still comes out.
                        print(f"FAILED {e['label']} ({seq} {mask} {pss}): {str(err).splitlines()[-1][:300]}",
                              file=sys.stderr, flush=True)
                        failures.append(f"{seq} {mask} {pss} {e['label']}")
                        e["failed"] = True
                        continue
                    e["times"] += j["repeat"]["times_s"] if "repeat" in j else [j["measured"]["time_s"]]
                    e["predicted"] = j["predicted"]["time_s"]
                    # The machine's speed around this execute against the calibration's (CPU
                    # ranks on a calibration with a reference block; null otherwise).
                    if j.get("machine_speed"):
                        e["ratios"].append(j["machine_speed"]["ratio"])
                    # The whole report (per rank and op class, predicted and measured), for
                    # reading a plan's error apart afterwards.
                    tag = re.sub(r"[^A-Za-z0-9.+-]+", "_", f"{ranks}-{transport}-{seq}-{mask}-{pss}-{e['label']}")
                    with open(os.path.join(args.out, f"execute-{tag}-r{rnd}.json"), "w") as f:
                        f.write(text)
            for e in [e for e in entries if e["times"] and not e.get("failed")]:
                measured = statistics.median(e["times"])
                predicted = e["predicted"]
                spread = (max(e["times"]) - min(e["times"])) / measured
                h = json.loads(run([mp, "simulate", e["file"], "-t", h100, "--format", "json"]))
                ratio = statistics.median(e["ratios"]) if e["ratios"] else None
                rows.append(dict(ranks=ranks, transport=transport, seq=seq, mask=mask, pass_=pss, plan=e["label"],
                                 predicted_s=predicted, measured_s=measured, spread=spread,
                                 error_pct=100 * (measured - predicted) / predicted,
                                 h100_s=h["simulated_s"], speed_ratio=ratio,
                                 error_at_speed_pct=error_at_speed(measured, predicted, ratio)))
                r = rows[-1]
                print(f"row: P={ranks} {seq} {mask} {pss} {r['plan']}: predicted {predicted * 1e3:.2f} ms, "
                      f"measured {measured * 1e3:.2f} ms ({r['error_pct']:+.1f}%)", file=sys.stderr, flush=True)
            # The tables so far, after every workload: a run cut off by a time limit keeps them.
            write_tables(args, rows, failures, kv_heads, dtype, started)


def error_at_speed(measured, predicted, ratio):
    """The error against the prediction scaled by the machine's speed of the moment (the median
    over the plan's executes of the reference block's time over the calibration's); None
    without one."""
    if ratio is None or not ratio > 0:
        return None
    return 100 * (measured - predicted * ratio) / (predicted * ratio)


def write_tables(args, rows, failures, kv_heads, dtype, started):
    if not rows:
        return
    # The uncalibrated H100 prediction, scaled by the one factor that best fits (median ratio).
    scale = statistics.median(r["measured_s"] / r["h100_s"] for r in rows)
    for r in rows:
        r["h100_scaled_error_pct"] = 100 * (r["measured_s"] - scale * r["h100_s"]) / (scale * r["h100_s"])
    with open(os.path.join(args.out, "fidelity.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    errors = [abs(r["error_pct"]) for r in rows]
    h100_errors = [abs(r["h100_scaled_error_pct"]) for r in rows]
    lines = ["| P | transport | seq | mask | pass | plan | predicted | measured (median) | spread | error | "
             "H100 x scale error |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['ranks']} | {r['transport']} | {r['seq']} | {r['mask']} | {r['pass_']} | {r['plan']} | "
                     f"{r['predicted_s'] * 1e3:.1f} ms | {r['measured_s'] * 1e3:.1f} ms | {100 * r['spread']:.0f}% | "
                     f"{r['error_pct']:+.1f}% | {r['h100_scaled_error_pct']:+.1f}% |")
    # Ranking: per workload, the simulator's first choice against the fastest measured plan.
    ranking = []
    groups = {}
    for r in rows:
        groups.setdefault((r["ranks"], r["transport"], r["seq"], r["mask"], r["pass_"]), []).append(r)
    for key, rs in groups.items():
        best_sim = min(rs, key=lambda r: r["predicted_s"])
        fastest = min(rs, key=lambda r: r["measured_s"])
        ranking.append((key, best_sim["plan"], fastest["plan"], 100 * (best_sim["measured_s"] / fastest["measured_s"] - 1)))
    summary = [
        f"{len(rows)} plans, {len(groups)} workloads ({args.seq} tokens, {args.heads}/{kv_heads} heads, "
        f"d {args.head_dim}, {dtype}, backend {args.backend}), "
        f"{args.rounds} rounds of --repeat {args.repeat}, {time.time() - started:.0f} s in all.",
        f"Calibrated: median |error| {statistics.median(errors):.1f}%, max {max(errors):.1f}%.",
        f"H100 topology x {scale:.4g} (one factor for the table): median |error| {statistics.median(h100_errors):.1f}%, "
        f"max {max(h100_errors):.1f}%.",
        f"Ranking: the simulator's first choice is within {max(x[3] for x in ranking):.1f}% of the fastest measured "
        f"plan in the worst workload (median {statistics.median(x[3] for x in ranking):.1f}%).",
    ]
    at_speed = [abs(r["error_at_speed_pct"]) for r in rows if r["error_at_speed_pct"] is not None]
    if at_speed:
        ratios = [r["speed_ratio"] for r in rows if r["speed_ratio"] is not None]
        summary.append(
            f"At the machine's speed of each run (the reference block, {len(at_speed)} plans; its time "
            f"{min(ratios):.3f}-{max(ratios):.3f}x the calibration's): median |error| "
            f"{statistics.median(at_speed):.1f}%, max {max(at_speed):.1f}%.")
    if failures:
        summary.append(f"{len(failures)} plans failed to run and are left out: {'; '.join(failures)}.")
    by_group = ["| P | transport | plans | median error (signed) | median abs error | max abs error |",
                "|---|---|---|---|---|---|"]
    for ranks, transport in sorted({(r["ranks"], r["transport"]) for r in rows}, key=lambda k: (k[1], k[0])):
        errs = [r["error_pct"] for r in rows if r["ranks"] == ranks and r["transport"] == transport]
        by_group.append(f"| {ranks} | {transport} | {len(errs)} | {statistics.median(errs):+.1f}% | "
                        f"{statistics.median(abs(e) for e in errs):.1f}% | {max(abs(e) for e in errs):.1f}% |")
    rank_lines = ["| P | transport | seq | mask | pass | simulator's first | fastest measured | first's excess |",
                  "|---|---|---|---|---|---|---|---|"]
    for key, sim_first, fastest, excess in ranking:
        rank_lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {sim_first} | {fastest} | "
                          f"{excess:.1f}% |")
    with open(os.path.join(args.out, "fidelity.md"), "w") as f:
        f.write("\n".join(summary) + "\n\n" + "\n".join(by_group) + "\n\n" + "\n".join(lines) + "\n\n" +
                "\n".join(rank_lines) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
