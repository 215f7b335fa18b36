#!/usr/bin/env python3
"""Simulator scaling: Mesh fwd+bwd at 1M tokens on DGX H100 clusters of 1024 to 16384 GPUs.

For each GPU count: topologies/dgx-h100-128node.toml with the ib level's node count scaled
(written to a temporary directory), the best Mesh plan that `meshplan plan` picks for it (32
query heads, 8 KV heads, head dim 128, causal, fwd+bwd), then `meshplan simulate PLAN -q
--format json` timed as a whole process (wall seconds and peak resident memory, from
os.wait4 on the child). Prints a Markdown table (docs/benchmarks.md, "Symmetry
classes"); with --compare also runs each plan with --no-symmetry (skip sizes whose full replay
does not fit in this machine's memory with --compare-up-to). Exits 1 when a run fails. Usage:

    python3 bench/simulator_scaling.py [--meshplan build/tools/meshplan] [--gpus 1024,4096,16384]
                                       [--compare] [--compare-up-to 4096]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "topologies", "dgx-h100-128node.toml")
GPUS_PER_NODE = 8


def scaled_topology(directory, gpus):
    """The 128-node DGX H100 file with the ib level's group_size set to gpus / 8 nodes."""
    with open(SOURCE) as f:
        text = f.read()
    nodes = gpus // GPUS_PER_NODE
    text, names = re.subn(r'^name = "dgx-h100-128node"', f'name = "dgx-h100-{nodes}node-scaled"', text, flags=re.M)
    text, sizes = re.subn(r"^group_size = 128(\s)", rf"group_size = {nodes}\1", text, flags=re.M)
    if names != 1 or sizes != 1:
        sys.exit(f"simulator_scaling: {SOURCE}: expected one name and one 'group_size = 128' line")
    path = os.path.join(directory, f"h{gpus}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def timed(command):
    """Runs command; returns (stdout, wall seconds, peak resident memory of that child in bytes)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (ru_maxrss in KiB)
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            sys.exit(f"simulator_scaling: {' '.join(command)} failed ({child.returncode}): {err.read().strip()}")
        return out.read(), wall, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meshplan", default="build/tools/meshplan")
    parser.add_argument("--gpus", default="1024,4096,16384")
    parser.add_argument("--compare", action="store_true", help="also run every plan with --no-symmetry")
    parser.add_argument("--compare-up-to", type=int, default=4096,
                        help="largest GPU count to run with --no-symmetry (16384 needs about 28 GiB)")
    args = parser.parse_args()
    sizes = [int(g) for g in args.gpus.split(",")]
    print("| GPUs | plan | symmetry | replay | wall | peak RSS | simulated | estimated | events |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for gpus in sizes:
            topology = scaled_topology(tmp, gpus)
            plan = os.path.join(tmp, f"m{gpus}.toml")
            subprocess.run([args.meshplan, "plan", "-t", topology, "--seq", "1M", "--heads", "32", "--kv-heads", "8",
                            "--head-dim", "128", "--mask", "causal", "--pass", "fwd+bwd", "--schemes", "mesh",
                            "--pick", "1", "--out", plan, "-q"], check=True, capture_output=True)
            modes = [[]]
            if args.compare and gpus <= args.compare_up_to:
                modes.append(["--no-symmetry"])
            for extra in modes:
                out, wall, peak = timed([args.meshplan, "simulate", plan, "-q", "--format", "json"] + extra)
                r = json.loads(out)
                rss = f"{peak / 2**20:.0f} MiB"
                note = r["symmetry"]
                how = ("proven" if "proven from" in note else "all ranks digested") if r["symmetric"] else "off"
                symmetry = f"{note.split(' (')[0]}, {how}" if r["symmetric"] else "off"
                print(f"| {gpus} | {r['plan']['parameters']} | {symmetry} | "
                      f"{r['replay_wall_s']:.3f} s | {wall:.2f} s | {rss} | {r['simulated_s'] * 1e3:.2f} ms | "
                      f"{r['estimated_s'] * 1e3:.2f} ms | {r['events']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
