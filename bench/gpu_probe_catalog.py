#!/usr/bin/env python3
"""Turns a GPU probe (bench/gpu_model_probe.py's probe.json) into the cluster model's terms:

  occupancy  each point's measured time against the one meshplan predicts for the same kernel call
             (a 1-GPU cluster of the device's catalog entry, `meshplan topo new`, then `plan --format
             json`'s compute_s: the model as shipped, no second copy of it here), and the occupancy
             factor alone: the point's rate over the most-heads point of its (backend, d, n, mask,
             pass) against the model's same ratio. Nothing is fitted.
  merge      HBM passes of the ring's out/LSE correction by form and partial dtype (medians).
  share      the attention call's slowdown beside a copy on k SMs, and (slowdown - 1) / k: the cost
             of one NCCL channel's CTA.
  gemm       the fraction of the catalog's dense peak the models' GEMMs reach, by dtype (median over
             the shapes), and the element-wise ops' GB/s.

With --write, the catalog entry's `gemm_efficiency` becomes the measured medians (fp16 takes bf16's:
the same tensor-core rate), with a comment naming the device, versions, date and command; the file
is replaced whole (a temporary file renamed), its other lines kept. The merge passes and the
per-channel cost have no catalog key yet (the ring's per-step term is one fitted number,
`ring_step_partial_passes`; issue 46 item 3): they are reported for that work.

  python3 bench/gpu_probe_catalog.py PROBE_JSON [--catalog h200-sxm] [--meshplan build/tools/meshplan]
                                     [--write] [--markdown FILE]

Exit status: 0, or 2 with one line on stderr for a missing or malformed file, an unknown device or
catalog entry, or a meshplan call that fails. Python 3 standard library only.
"""
import argparse
import heapq
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
# torch's device names to the GPU catalog's entries (topologies/gpus/).
CATALOG_OF_DEVICE = (("H200", "h200-sxm"), ("H100", "h100-sxm5"), ("H800", "h800-sxm5"),
                     ("A100", "a100-sxm4-80gb"))
# torch SDPA's backends to meshplan's attention-kernel names (bench/attention_curves.py's map).
KERNEL_OF_BACKEND = {"flash": "fa2", "cudnn": "cudnn"}
ROW_KEYS = {"occupancy": ("backend", "d", "n", "heads", "batch", "mask", "pass", "ms"),
            "merge": ("form", "rows", "heads", "partial_dtype", "passes"),
            "share": ("backend", "sms", "slowdown"),
            "gemm": ("dtype", "m", "k", "n", "tflops"),
            "elementwise": ("op", "gbps")}


class Refusal(Exception):
    """One line for stderr, exit status 2."""


def load_probe(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise Refusal(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise Refusal(f"{path}: not JSON: line {e.lineno}: {e.msg}")
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise Refusal(f"{path}: key 'rows': missing or not a list (a probe.json of "
                      "bench/gpu_model_probe.py)")
    for i, row in enumerate(doc["rows"]):
        part = row.get("part") if isinstance(row, dict) else None
        if part not in ROW_KEYS:
            raise Refusal(f"{path}: rows[{i}]: key 'part': {part!r} is not one of "
                          f"{', '.join(ROW_KEYS)}")
        if "error" in row:
            continue
        missing = [k for k in ROW_KEYS[part] if k not in row]
        if missing:
            raise Refusal(f"{path}: rows[{i}] ({part}): key '{missing[0]}' missing")
    return doc


def catalog_name(doc, given):
    if given:
        return given
    device = str(doc.get("device", ""))
    for needle, name in CATALOG_OF_DEVICE:
        if needle in device:
            return name
    raise Refusal(f"key 'device': {device!r} has no GPU catalog entry here; name one with --catalog")


def catalog_path(name):
    """A shipped entry's name, or a file (a path ending in .toml: its stem names the entry the
    1-GPU cluster of the predictions uses)."""
    path = name if name.endswith(".toml") else os.path.join(ROOT, "topologies", "gpus", name + ".toml")
    if not os.path.isfile(path):
        raise Refusal(f"--catalog: {name}: no file {path}")
    return path


def rows_of(doc, part):
    return [r for r in doc["rows"] if r.get("part") == part and "error" not in r]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise Refusal(f"{' '.join(cmd)}: exit {p.returncode}: "
                      f"{(p.stderr.strip().splitlines() or [''])[-1]}")
    return p.stdout


def predicted_seconds(meshplan, cluster, row):
    """meshplan's kernel time for the probe's call: the 1-GPU plan's compute seconds."""
    out = run([meshplan, "plan", "-t", cluster, "--seq", str(row["n"]), "--heads", str(row["heads"]),
               "--kv-heads", str(row["heads"]), "--head-dim", str(row["d"]), "--batch",
               str(row["batch"]), "--dtype", "bf16", "--mask", row["mask"], "--pass", row["pass"],
               "--attention-kernel", KERNEL_OF_BACKEND[row["backend"]], "--schemes", "ring",
               "--format", "json"])
    return json.loads(out)["plans"][0]["compute_s"]


def occupancy_report(rows, predict):
    """Per point: time error (predicted / measured - 1) and the occupancy factor's error (the
    measured rate over the group's most-heads point against the model's same ratio)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["backend"], r["d"], r["n"], r["mask"], r["pass"]), []).append(r)
    points = []
    for key, members in sorted(groups.items()):
        ref = max(members, key=lambda r: (r["heads"] * r["batch"], r["batch"]))
        ref_pred = predict(ref)
        for r in members:
            pred = predict(r)
            measured_factor = ref["ms"] / r["ms"] * (r["heads"] * r["batch"]) / (
                ref["heads"] * ref["batch"])
            model_factor = ref_pred / pred * (r["heads"] * r["batch"]) / (
                ref["heads"] * ref["batch"])
            points.append({**r, "predicted_ms": pred * 1e3, "time_error": pred * 1e3 / r["ms"] - 1,
                           "measured_factor": measured_factor, "model_factor": model_factor,
                           "factor_error": model_factor / measured_factor - 1})
    return points


# Sequences x heads per call, bucketed: where the occupancy model's misses sit.
HEADS_BUCKETS = ((1, 1), (2, 4), (5, 16), (17, 64), (65, None))


def heads_bucket(batch_heads):
    for lo, hi in HEADS_BUCKETS:
        if batch_heads >= lo and (hi is None or batch_heads <= hi):
            return f"{lo}+" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")
    raise ValueError(batch_heads)


# A candidate for the causal call's cost (issue 46 item 2), reported beside the shipped model and
# not used by it: the call's CTAs placed greedily, in launch order, on the GPU's CTA slots, each
# causal row tile computing every key tile up to and including its diagonal one (the diagonal
# tile at full cost: the kernel masks inside it), against the full call of the same shape. Per
# (backend, pass): query (forward) or key (backward) rows per CTA, CTAs per SM, and whether the
# heaviest tile launches first. FlashAttention-2's from the catalog's fa2 occupancy (the forward's
# row tile i sees i + 1 key tiles and launches in row order; the backward's key tile j is seen
# by m - j query tiles, j = 0 first); cuDNN states no tiles: the same shapes at 1 CTA per SM are
# an assumption.
SCHEDULE_SHAPES = {("flash", "fwd"): (128, 2, False), ("flash", "bwd"): (128, 1, True),
                   ("cudnn", "fwd"): (128, 1, False), ("cudnn", "bwd"): (128, 1, True)}
SCHEDULE_MAX_CTAS = 1 << 16  # larger calls are many waves deep: not simulated


def greedy_makespan(works, copies, slots):
    """Makespan of `copies` x `works` (in launch order) on `slots` slots, each next work on the
    slot that frees first."""
    free = [0.0] * min(slots, copies * len(works))
    for _ in range(copies):
        for w in works:
            heapq.heappush(free, heapq.heappop(free) + w)
    return max(free)


def causal_schedule_ratio(batch_heads, n, tile_rows, slots, heavy_first):
    """A causal call's time over the full call's under the greedy schedule, or None past
    SCHEDULE_MAX_CTAS. Full: every CTA m tiles, ceil(CTAs / slots) waves of m."""
    m = math.ceil(n / tile_rows)
    if batch_heads * m > SCHEDULE_MAX_CTAS:
        return None
    works = list(range(m, 0, -1)) if heavy_first else list(range(1, m + 1))
    full = math.ceil(batch_heads * m / slots) * m
    return greedy_makespan(works, batch_heads, slots) / full


def misses_by_heads(occupancy, sm_count=0):
    """{(kernel, pass, mask): {bucket: (signed median time error, points)}}, and per (kernel,
    pass) the causal call's time over the full call's at the same size, measured against the
    model's and the greedy schedule's ({bucket: (measured median, model median, schedule median
    or None, pairs)}; the schedule needs sm_count): the model's causal cost is visible pairs plus
    a cut term, and a call with fewer CTAs than SM slots runs as long as its longest CTA, which
    this table shows."""
    errors, pairs = {}, {}
    full = {(p["backend"], p["d"], p["n"], p["heads"], p["batch"], p["pass"]): p
            for p in occupancy if p["mask"] == "full"}
    for p in occupancy:
        bucket = heads_bucket(p["heads"] * p["batch"])
        key = (KERNEL_OF_BACKEND[p["backend"]], p["pass"], p["mask"])
        errors.setdefault(key, {}).setdefault(bucket, []).append(p["time_error"])
        f = full.get((p["backend"], p["d"], p["n"], p["heads"], p["batch"], p["pass"]))
        if p["mask"] == "causal" and f is not None:
            shape = SCHEDULE_SHAPES.get((p["backend"], p["pass"]))
            schedule = None
            if shape is not None and sm_count > 0:
                schedule = causal_schedule_ratio(p["heads"] * p["batch"], p["n"], shape[0],
                                                 sm_count * shape[1], shape[2])
            pairs.setdefault(key[:2], {}).setdefault(bucket, []).append(
                (p["ms"] / f["ms"], p["predicted_ms"] / f["predicted_ms"], schedule))
    by_error = {k: {b: (statistics.median(v), len(v)) for b, v in d.items()}
                for k, d in errors.items()}
    def median_or_none(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None
    by_ratio = {k: {b: (statistics.median(m for m, _, _ in v), statistics.median(x for _, x, _ in v),
                        median_or_none(s for _, _, s in v), len(v)) for b, v in d.items()}
                for k, d in pairs.items()}
    return by_error, by_ratio


def median_abs(values):
    return statistics.median(abs(v) for v in values) if values else float("nan")


def summarize(doc, occupancy, peak):
    lines = [f"GPU probe: {doc.get('device', '?')}, driver {doc.get('driver', '?')}, torch "
             f"{doc.get('torch', '?')}, cuDNN {doc.get('cudnn', '?')}, {doc.get('date', '?')}"]
    if occupancy:
        lines.append("")
        lines.append("| kernel | pass | points | median abs time error | max | median abs occupancy-"
                     "factor error | max |")
        lines.append("|---|---|---|---|---|---|---|")
        for backend in sorted({p["backend"] for p in occupancy}):
            for pas in ("fwd", "bwd"):
                sel = [p for p in occupancy if p["backend"] == backend and p["pass"] == pas]
                if not sel:
                    continue
                t = [p["time_error"] for p in sel]
                f = [p["factor_error"] for p in sel]
                lines.append(f"| {KERNEL_OF_BACKEND[backend]} | {pas} | {len(sel)} | "
                             f"{median_abs(t):.1%} | {max(abs(v) for v in t):.1%} | "
                             f"{median_abs(f):.1%} | {max(abs(v) for v in f):.1%} |")
    if occupancy:
        by_error, by_ratio = misses_by_heads(occupancy, int(doc.get("sm_count") or 0))
        buckets = [heads_bucket(lo) for lo, _ in HEADS_BUCKETS]
        lines += ["", "Signed median time error (predicted / measured - 1) by sequences x heads per "
                  "call:", "", "| kernel | pass | mask | " + " | ".join(buckets) + " |",
                  "|---|---|---|" + "---|" * len(buckets)]
        for (kernel, pas, mask), d in sorted(by_error.items()):
            cells = [f"{d[b][0]:+.0%} ({d[b][1]})" if b in d else "" for b in buckets]
            lines.append(f"| {kernel} | {pas} | {mask} | " + " | ".join(cells) + " |")
        if by_ratio:
            lines += ["", "A causal call's time over the full call's of the same size, measured / "
                      "model / greedy CTA schedule (medians; the schedule is a candidate the model "
                      "does not use):", "", "| kernel | pass | " + " | ".join(buckets) + " |",
                      "|---|---|" + "---|" * len(buckets)]
            for (kernel, pas), d in sorted(by_ratio.items()):
                cells = [f"{d[b][0]:.2f} / {d[b][1]:.2f} / " +
                         ("-" if d[b][2] is None else f"{d[b][2]:.2f}") if b in d else ""
                         for b in buckets]
                lines.append(f"| {kernel} | {pas} | " + " | ".join(cells) + " |")
    merge = rows_of(doc, "merge")
    if merge:
        # Probes before 2026-12-01 timed the eager form only and wrote no `compile`.
        lines += ["", "| merge form | compiled | partial | median HBM passes | range |",
                  "|---|---|---|---|---|"]
        for form in sorted({r["form"] for r in merge}):
            for comp in sorted({r.get("compile", "eager") for r in merge}):
                for dt in sorted({r["partial_dtype"] for r in merge}):
                    p = [r["passes"] for r in merge if r["form"] == form and
                         r.get("compile", "eager") == comp and r["partial_dtype"] == dt]
                    if p:
                        lines.append(f"| {form} | {comp} | {dt} | {statistics.median(p):.1f} | "
                                     f"{min(p):.1f}-{max(p):.1f} |")
    share = [r for r in rows_of(doc, "share") if r["sms"] > 0]
    if share:
        lines += ["", "| kernel | copy SMs | slowdown | per SM | copy GB/s |", "|---|---|---|---|---|"]
        for r in sorted(share, key=lambda r: (r["backend"], r["sms"])):
            lines.append(f"| {KERNEL_OF_BACKEND[r['backend']]} | {r['sms']} | {r['slowdown']:.3f} | "
                         f"{(r['slowdown'] - 1) / r['sms']:.4f} | {r.get('copy_gbps', 0):.0f} |")
    eff = gemm_efficiency(doc, peak)
    if eff:
        lines += ["", "GEMM efficiency (median over the models' shapes, of the catalog's peak): " +
                  ", ".join(f"{k} {v:.3f}" for k, v in eff.items())]
    elementwise = rows_of(doc, "elementwise")
    if elementwise:
        by_op = {}
        for r in elementwise:
            by_op.setdefault(r["op"], []).append(r["gbps"])
        lines.append("Element-wise ops as torch runs them (median GB/s): " +
                     ", ".join(f"{op} {statistics.median(v):.0f}" for op, v in sorted(by_op.items())))
    return "\n".join(lines) + "\n"


def read_peak(text):
    m = re.search(r"^peak_tflops\s*=\s*\{([^}]*)\}", text, re.M)
    if not m:
        raise Refusal("the catalog entry has no peak_tflops line")
    return {k: float(v) for k, v in re.findall(r"(\w+)\s*=\s*([0-9.]+)", m.group(1))}


def gemm_efficiency(doc, peak):
    out = {}
    for dtype in ("bf16", "fp8"):
        rates = [r["tflops"] for r in rows_of(doc, "gemm") if r["dtype"] == dtype]
        if rates and peak.get(dtype):
            out[dtype] = statistics.median(rates) / peak[dtype]
    return out


def rewrite_gemm_efficiency(text, eff, doc):
    """The catalog text with its gemm_efficiency line (and the comment block right above it)
    replaced by the measured values; fp16 takes bf16's, a dtype not measured keeps its value."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, l in enumerate(lines) if re.match(r"gemm_efficiency\s*=", l)), None)
    if at is None:
        raise Refusal("the catalog entry has no gemm_efficiency line to replace")
    old = dict(re.findall(r"(\w+)\s*=\s*([0-9.]+)", lines[at].split("=", 1)[1]))
    values = {k: float(v) for k, v in old.items()}
    if "bf16" in eff:
        values["bf16"] = values["fp16"] = round(eff["bf16"], 3)
    if "fp8" in eff:
        values["fp8"] = round(eff["fp8"], 3)
    start = at
    while start > 0 and lines[start - 1].startswith("#") and not lines[start - 1].startswith("# Attention"):
        start -= 1
    comment = (
        "# GEMM rates (the whole step's projections and MLP, core/cost/gemm_time.h): the fraction of\n"
        "# the dense peak the shipped models' GEMMs reach, the median over their shapes at TP 1-8\n"
        f"# (torch.matmul bf16, torch._scaled_mm fp8 e4m3). Measured on {doc.get('device', '?')}\n"
        f"# (driver {doc.get('driver', '?')}, torch {doc.get('torch', '?')}), {doc.get('date', '?')}:\n"
        f"# {doc.get('command', 'bench/gpu_model_probe.py')}, written by bench/gpu_probe_catalog.py.\n")
    line = "gemm_efficiency = { " + ", ".join(f"{k} = {v:g}" for k, v in values.items()) + " }\n"
    return "".join(lines[:start]) + comment + line + "".join(lines[at + 1:])


def write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".gpu_probe_catalog.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probe")
    ap.add_argument("--catalog", default="",
                    help="GPU catalog entry, a name or a .toml file (default: from the device)")
    ap.add_argument("--meshplan", default=os.path.join(ROOT, "build", "tools", "meshplan"))
    ap.add_argument("--write", action="store_true", help="write gemm_efficiency into the entry")
    ap.add_argument("--markdown", default="", help="also write the report to this file")
    args = ap.parse_args(argv)
    try:
        doc = load_probe(args.probe)
        path = catalog_path(catalog_name(doc, args.catalog))
        name = os.path.basename(path)[: -len(".toml")]
        with open(path) as f:
            text = f.read()
        peak = read_peak(text)
        occupancy = []
        occ_rows = [r for r in rows_of(doc, "occupancy") if r["backend"] in KERNEL_OF_BACKEND]
        if occ_rows:
            if not os.access(args.meshplan, os.X_OK):
                raise Refusal(f"--meshplan: {args.meshplan}: not an executable (build it first)")
            with tempfile.TemporaryDirectory() as tmp:
                cluster = os.path.join(tmp, "one-gpu.toml")
                run([args.meshplan, "topo", "new", "--gpu", name, "--gpus-per-node", "1", "-q",
                     "-o", cluster])
                cache = {}

                def predict(r):
                    key = tuple(r[k] for k in ROW_KEYS["occupancy"][:-1])
                    if key not in cache:
                        cache[key] = predicted_seconds(args.meshplan, cluster, r)
                    return cache[key]
                occupancy = occupancy_report(occ_rows, predict)
        report = summarize(doc, occupancy, peak)
        sys.stdout.write(report)
        if args.markdown:
            write_atomically(os.path.abspath(args.markdown), report)
        if args.write:
            eff = gemm_efficiency(doc, peak)
            if not eff:
                raise Refusal(f"{args.probe}: no GEMM rows: nothing to write")
            write_atomically(path, rewrite_gemm_efficiency(text, eff, doc))
            print(f"gpu_probe_catalog: {path}: gemm_efficiency written")
    except Refusal as e:
        print(f"gpu_probe_catalog: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
