#!/usr/bin/env python3
"""Issue 12's targets for `meshplan execute` on this machine (docs/benchmarks.md, "execute at scale").

1. Memory: the peak resident set of a CPU execute (threads: every rank in the process) against the
   planner's per-rank peak memory (fp32 on the CPU) times the ranks, after subtracting a constant:
   the peak RSS of a tiny run of the same binary (code, libraries, thread stacks) plus, per rank,
   the CPU kernels' score scratch (two bands of at most 2^20 fp32 scores, 8 MiB: executor/
   block_kernels.cc), which does not grow with the sequence. Target: <= 1.5x.
2. The README's execute examples (the 4-rank `p.toml` with --check, and `small.toml --repeat 5
   --check`) each run in under 10 s.
3. Decomposition overhead: an 8-rank ring and mesh run (dgx-h100-1node, threads transport) against
   one whole-attention kernel call of the same FLOPs (a 1-rank plan: one block per pass), in
   interleaved rounds; efficiency = (FLOPs / t_8) / (FLOPs / t_1) = t_1 / t_8 with median times.
   Target: >= 70%. The 1-rank run computes on one thread; the 8 ranks share the machine's cores,
   so the report also gives the efficiency per core, t_1 / (t_8 x cores).

Usage: python3 bench/execute_targets.py [--meshplan build/tools/meshplan] [--rounds 3] [--seq 4K]
Prints a Markdown report (stdout) with every command it ran.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, cwd=None):
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {r.returncode}: {r.stderr.strip()}")
    return r.stdout, wall


def plan(mp, topology, out, seq, scheme, heads, kv_heads, dim, mask, cwd):
    run([mp, "plan", "-t", topology, "--seq", seq, "--heads", str(heads), "--kv-heads", str(kv_heads),
         "--head-dim", str(dim), "--mask", mask, "--schemes", scheme, "-q", "--out", out], cwd=cwd)


def execute_json(mp, plan_file, repeat, cwd):
    out, wall = run([mp, "execute", plan_file, "--repeat", str(repeat), "--format", "json", "-q"], cwd=cwd)
    return json.loads(out), wall


def one_gpu_topology(dirname):
    """dgx-h100-4gpu with its NVLink group cut to one GPU: a 1-rank cluster."""
    with open(os.path.join(ROOT, "topologies", "dgx-h100-4gpu.toml")) as f:
        text = f.read()
    text = re.sub(r'^name = "dgx-h100-4gpu"', 'name = "h100-1gpu"', text, flags=re.M)
    text = re.sub(r"^group_size = 4 .*$", "group_size = 1", text, flags=re.M)
    path = os.path.join(dirname, "h100-1gpu.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def memory_target(mp, tmp, seq):
    print("## 1. Peak host memory against the model\n")
    plan(mp, "dgx-h100-4gpu", "tiny.toml", "256", "ring", 2, 2, 16, "causal", tmp)
    tiny, _ = execute_json(mp, "tiny.toml", 1, tmp)
    base = tiny["memory"]["process_peak_rss_bytes"]
    scratch = 8 * 2**20
    print(f"constant: peak RSS of a 256-token 4-rank run ({base / 2**20:.1f} MiB) + 8 MiB of kernel score "
          f"scratch per rank\n")
    print("| plan | ranks | model x ranks | peak RSS | (RSS - constant) / (model x ranks) | engine peak / model |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for topology, ranks in (("dgx-h100-4gpu", 4), ("topologies/dgx-h100-1node.toml", 8)):
        for scheme in ("ring", "mesh", "ulysses", "usp"):
            name = f"m-{scheme}-{ranks}.toml"
            topo = topology if not topology.startswith("topologies/") else os.path.join(ROOT, topology)
            try:
                plan(mp, topo, name, seq, scheme, 8, 8, 64, "causal", tmp)
            except RuntimeError:
                continue  # no valid plan of this scheme here
            d, _ = execute_json(mp, name, 1, tmp)
            m = d["memory"]
            model = m["modelled_rank_peak_bytes"] * ranks
            constant = base + scratch * ranks
            ratio = (m["process_peak_rss_bytes"] - constant) / model
            engine = max(m["rank_peak_bytes"]) / m["modelled_rank_peak_bytes"]
            worst = max(worst, ratio)
            print(f"| {d['plan']['scheme']} {d['plan']['parameters']} | {ranks} | {model / 2**20:.1f} MiB | "
                  f"{m['process_peak_rss_bytes'] / 2**20:.1f} MiB | {ratio:.2f}x | {engine:.2f} |")
    print(f"\nworst: {worst:.2f}x (target <= 1.5x): {'met' if worst <= 1.5 else 'NOT met'}\n")
    return worst


def readme_target(mp, tmp):
    print("## 2. The README's execute examples\n")
    steps = [
        [mp, "plan", "-t", "dgx-h100-4gpu", "--seq", "256", "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
         "--schemes", "mesh", "-q", "--out", "p.toml"],
        [mp, "execute", "p.toml", "--check"],
        [mp, "plan", "-t", os.path.join(ROOT, "topologies", "dgx-h100-1node.toml"), "--seq", "1K", "--heads", "8",
         "--kv-heads", "2", "--head-dim", "32", "--schemes", "ring", "-q", "--out", "small.toml"],
        [mp, "execute", "small.toml", "--repeat", "5", "--check"],
    ]
    worst = 0.0
    print("| command | wall |")
    print("|---|---|")
    for cmd in steps:
        _, wall = run(cmd, cwd=tmp)
        worst = max(worst, wall)
        print(f"| `meshplan {' '.join(os.path.basename(c) if c.endswith('.toml') and '/' in c else c for c in cmd[1:])}` "
              f"| {wall:.2f} s |")
    print(f"\nslowest: {worst:.2f} s (target < 10 s): {'met' if worst < 10 else 'NOT met'}\n")
    return worst


def efficiency_target(mp, tmp, seq, rounds):
    print("## 3. 8 ranks against one whole-attention kernel call\n")
    one = one_gpu_topology(tmp)
    node = os.path.join(ROOT, "topologies", "dgx-h100-1node.toml")
    rows = []
    for mask in ("full", "causal"):
        plan(mp, one, f"e1-{mask}.toml", seq, "ring", 8, 8, 64, mask, tmp)
        for scheme in ("ring", "mesh"):
            plan(mp, node, f"e8-{scheme}-{mask}.toml", seq, scheme, 8, 8, 64, mask, tmp)
        times = {k: [] for k in ("one", "ring", "mesh")}
        flops = None
        for r in range(rounds):
            order = [("one", f"e1-{mask}.toml"), ("ring", f"e8-ring-{mask}.toml"), ("mesh", f"e8-mesh-{mask}.toml")]
            if r % 2:
                order.reverse()
            for key, f in order:
                d, _ = execute_json(mp, f, 1, tmp)
                times[key].append(d["repeat"]["median_s"])
                flops = d["flops"]
        t1 = statistics.median(times["one"])
        for scheme in ("ring", "mesh"):
            t8 = statistics.median(times[scheme])
            rows.append((mask, scheme, flops, t1, t8, t1 / t8))
    cores = os.cpu_count()
    print(f"| mask | scheme (8 ranks) | FLOPs | one kernel | 8 ranks | efficiency t_1 / t_8 | per core (/{cores}) |")
    print("|---|---|---|---|---|---|---|")
    for mask, scheme, flops, t1, t8, eff in rows:
        print(f"| {mask} | {scheme} | {flops:.3g} | {t1:.3f} s ({flops / t1 / 1e9:.1f} GFLOP/s) | "
              f"{t8:.3f} s ({flops / t8 / 1e9:.1f} GFLOP/s) | {eff * 100:.0f}% | {eff / cores * 100:.0f}% |")
    worst = min(r[5] for r in rows)
    print(f"\nworst: {worst * 100:.0f}% (target >= 70%): {'met' if worst >= 0.7 else 'NOT met'}\n")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seq", default="4K")
    args = ap.parse_args()
    mp = os.path.abspath(args.meshplan)
    print(f"# execute targets ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores)\n")
    print(f"command: `python3 bench/execute_targets.py --rounds {args.rounds} --seq {args.seq}`\n")
    with tempfile.TemporaryDirectory() as tmp:
        memory_target(mp, tmp, args.seq)
        readme_target(mp, tmp)
        efficiency_target(mp, tmp, args.seq, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
