#!/usr/bin/env python3
"""Published-measurement suite: meshplan's predictions against measured context-parallel attention.

Reads bench/published/points.csv (measured times of context-parallel attention from public sources,
described in bench/published/README.md; bench/published/heldout.csv is the held-out set), runs one `meshplan plan` per workload group, matches each
point to the plan row the source ran, and prints Markdown: the points with their estimate and
simulated errors, summaries per source, a ranking check within each workload group, the
single-GPU kernel points (listed, not predicted) and the command run for each group.

Usage:
  python3 bench/published.py [--meshplan build/tools/meshplan] [--points bench/published/points.csv]
                             [--json FILE] [--max-median F]
                             [--leave-one-source-out [--max-loso-median F]]

Exit status: 0 on success; 1 when a point matches no plan row, or when --max-median is given and
the overall median |error| of the estimate over the fidelity points exceeds it; 2 when something
the suite needs fails (binary, file, meshplan run, malformed data). Every failure is one line on
stderr. Python 3 standard library only.
"""

import argparse
import concurrent.futures
import csv
import io
import json
import os
import shlex
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MESHPLAN = os.path.join(REPO, "build", "tools", "meshplan")
DEFAULT_POINTS = os.path.join(REPO, "bench", "published", "points.csv")

SIMULATE = 1000          # plans replayed per group; every matched row must have a simulated time
SHORT_MS = 15.0          # measured time at or below which a point counts as short
RANK_MIN_GAP = 0.05      # pairs whose measured times differ by at most this are not ranked
KERNEL_SCHEME = "single kernel"  # meshplan_scheme of single-GPU kernel benchmarks: listed only
PLAN_TIMEOUT_S = 120

INT_COLUMNS = ("gpus", "seq_tokens", "batch", "q_heads", "kv_heads", "head_dim")
REQUIRED_COLUMNS = ("id", "source") + INT_COLUMNS + (
    "mask", "pass", "library", "meshplan_scheme", "meshplan_selection", "measured", "unit")
GROUP_FIELDS = ("source", "gpus", "seq_tokens", "batch", "q_heads", "kv_heads", "head_dim",
                "mask", "pass", "library")
LAYOUTS = ("contiguous", "zigzag", "striped", "balanced")
PASS_FACTOR = {"fwd": 1.0, "bwd": 2.5, "fwd+bwd": 3.5}


class SuiteError(Exception):
    """A failure of something the suite needs; main prints it as one line and exits 2."""


class MatchError(Exception):
    """A point that matches no plan row; main prints it as one line and exits 1."""


# ----------------------------------------------------------------------------- input

def load_points(path):
    """Read points.csv into a list of dicts, in file order.

    Integer columns become int, `measured` float, `meshplan_selection` a dict. Raises SuiteError
    when the file is missing, a required column is absent, ids repeat, or a value does not parse.
    """
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SuiteError(f"{path}: missing column(s) {', '.join(missing)}")
            raw = list(reader)
    except OSError as e:
        raise SuiteError(f"{path}: cannot read points file ({e.strerror})") from e
    points, seen = [], set()
    for line, row in enumerate(raw, start=2):
        try:
            p = dict(row)
            for c in INT_COLUMNS:
                p[c] = int(row[c])
            p["measured"] = float(row["measured"])
            p["selection"] = json.loads(row["meshplan_selection"] or "{}")
            if not isinstance(p["selection"], dict):
                raise ValueError("meshplan_selection is not a JSON object")
        except (ValueError, json.JSONDecodeError) as e:
            raise SuiteError(f"{path}:{line}: point {row.get('id')!r}: {e}") from e
        if p["id"] in seen:
            raise SuiteError(f"{path}:{line}: duplicate id {p['id']!r}")
        seen.add(p["id"])
        points.append(p)
    return points


def is_kernel_point(point):
    """True for a single-GPU kernel benchmark (not a context-parallel plan)."""
    return point["meshplan_scheme"] == KERNEL_SCHEME


def cluster_for(point):
    """Shipped topology name for a fidelity point's cluster: the optional `cluster` column, else
    the suite's sources by GPU count; SuiteError if neither names one."""
    if (point.get("cluster") or "").strip():
        return point["cluster"].strip()
    src, gpus = point["source"], point["gpus"]
    if src in ("USP-A", "USP-G") and gpus == 8:
        return "dgx-a100-1node"
    if src == "MAGI" and gpus == 8:
        return "dgx-h100-1node"
    if src == "MAGI" and gpus == 64:
        return "dgx-h100-8node"
    raise SuiteError(f"point {point['id']}: no cluster for source {src} with {gpus} GPUs")


def fa_flops_per_gpu(point):
    """FLOPs per GPU as FlashAttention counts them.

    Forward = 4 * batch * seq^2 * q_heads * head_dim, halved for a causal mask; bwd = 2.5 x fwd,
    fwd+bwd = 3.5 x fwd; divided by the point's GPUs. SuiteError for another mask or pass.
    """
    if point["mask"] not in ("full", "causal"):
        raise SuiteError(f"point {point['id']}: no FA FLOP convention for mask {point['mask']!r}")
    if point["pass"] not in PASS_FACTOR:
        raise SuiteError(f"point {point['id']}: unknown pass {point['pass']!r}")
    fwd = 4.0 * point["batch"] * point["seq_tokens"] ** 2 * point["q_heads"] * point["head_dim"]
    if point["mask"] == "causal":
        fwd /= 2.0
    return fwd * PASS_FACTOR[point["pass"]] / point["gpus"]


def measured_seconds(point):
    """Measured wall time in seconds of one call, from the point's value and unit (> 0)."""
    value, unit = point["measured"], point["unit"]
    if value <= 0:
        raise SuiteError(f"point {point['id']}: measured value {value} is not positive")
    if unit == "iterations_per_s":
        return 1.0 / value
    if unit == "tflops_per_gpu_fa_convention":
        return fa_flops_per_gpu(point) / (value * 1e12)
    raise SuiteError(f"point {point['id']}: unknown unit {unit!r}")


def group_key(point):
    """The workload a point belongs to: one meshplan run serves every point with this key (its
    fields, then the cluster)."""
    return tuple(point[f] for f in GROUP_FIELDS) + (cluster_for(point),)


def group_points(points):
    """Fidelity points grouped by workload, as {key: [points]} in first-appearance order."""
    groups = {}
    for p in points:
        groups.setdefault(group_key(p), []).append(p)
    return groups


def group_label(key):
    """Short human label of a workload group key."""
    d = dict(zip(GROUP_FIELDS, key))
    return (f"{d['source']} {key[-1]} {d['gpus']}gpu seq={d['seq_tokens']} b={d['batch']} "
            f"h={d['q_heads']}/{d['kv_heads']} d={d['head_dim']} {d['mask']} {d['pass']} "
            f"{d['library']}")


# ----------------------------------------------------------------------------- meshplan

def check_meshplan(path):
    """SuiteError unless path is an executable file."""
    if not os.path.isfile(path):
        raise SuiteError(f"{path}: meshplan binary not found (build it, or pass --meshplan)")
    if not os.access(path, os.X_OK):
        raise SuiteError(f"{path}: meshplan binary is not executable")


def run_meshplan(cmd):
    """Run cmd and return its stdout; SuiteError (naming the command) if it fails or times out."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=PLAN_TIMEOUT_S)
    except OSError as e:
        raise SuiteError(f"cannot run {cmd[0]}: {e.strerror}") from e
    except subprocess.TimeoutExpired as e:
        raise SuiteError(f"timed out after {PLAN_TIMEOUT_S} s: {shlex.join(cmd)}") from e
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise SuiteError(f"meshplan failed (exit {r.returncode}): {shlex.join(cmd)}: {last}")
    return r.stdout


def stated_model_error(meshplan):
    """The model error meshplan's plan table uses for its ties (`model_error` of the JSON)."""
    text = run_meshplan([meshplan, "plan", "-t", "dgx-h100-1node", "--seq", "8K", "--top", "1",
                         "-q", "--format", "json"])
    try:
        return float(json.loads(text)["model_error"])
    except (ValueError, KeyError, TypeError) as e:
        raise SuiteError(f"meshplan plan --format json has no model_error: {e}")


def plan_command(meshplan, key, cluster, schemes):
    """The `meshplan plan` argv for one workload group (schemes in first-appearance order), with
    the attention library the source ran."""
    d = dict(zip(GROUP_FIELDS, key))
    cmd = [meshplan, "plan", "-t", cluster, "--seq", str(d["seq_tokens"]),
           "--batch", str(d["batch"]), "--heads", str(d["q_heads"]),
           "--kv-heads", str(d["kv_heads"]), "--head-dim", str(d["head_dim"]),
           "--mask", d["mask"], "--pass", d["pass"], "--schemes", ",".join(schemes),
           "--format", "csv", "--top", "0", "--all-variants", "-q", "--simulate", str(SIMULATE),
           "--attention-kernel", d["library"]]
    return cmd


def parse_plan_csv(text, cmd):
    """Rows of `meshplan plan --format csv` as dicts: time_s float, simulated_s float or None.

    SuiteError (naming the command) when the columns scheme/parameters/time_s/simulated_s are
    missing or a time does not parse.
    """
    reader = csv.DictReader(io.StringIO(text))
    need = ("scheme", "parameters", "time_s", "simulated_s")
    if not reader.fieldnames or any(c not in reader.fieldnames for c in need):
        raise SuiteError(f"meshplan output lacks columns {', '.join(need)}: {shlex.join(cmd)}")
    rows = []
    for r in reader:
        try:
            r["time_s"] = float(r["time_s"])
            r["simulated_s"] = float(r["simulated_s"]) if r["simulated_s"].strip() else None
        except ValueError as e:
            raise SuiteError(f"meshplan output: bad time ({e}): {shlex.join(cmd)}") from e
        rows.append(r)
    return rows


# ----------------------------------------------------------------------------- matching

def row_matches(point, row):
    """True when a plan row is the plan the point's source ran.

    The scheme must equal meshplan_scheme; each key of meshplan_selection constrains the row's
    parameter tokens: layout -> that layout token; cache_forward -> `cache` present iff true;
    ulysses=n -> `U=n` (usp, mesh-ulysses) or `hp=n` (loongtrain); window=n -> `w=n`
    (loongtrain). A key the suite does not know raises SuiteError.
    """
    scheme = point["meshplan_scheme"]
    if row["scheme"] != scheme:
        return False
    tokens = set(row["parameters"].split())
    for k, v in point["selection"].items():
        if k == "layout":
            if v not in LAYOUTS:
                raise SuiteError(f"point {point['id']}: unknown layout {v!r}")
            ok = v in tokens
        elif k == "cache_forward":
            ok = ("cache" in tokens) == bool(v)
        elif k == "ulysses" and scheme in ("usp", "mesh-ulysses"):
            ok = f"U={v}" in tokens
        elif k == "ulysses" and scheme == "loongtrain":
            ok = f"hp={v}" in tokens
        elif k == "window" and scheme == "loongtrain":
            ok = f"w={v}" in tokens
        else:
            raise SuiteError(f"point {point['id']}: selection key {k!r} not understood "
                             f"for scheme {scheme}")
        if not ok:
            return False
    return True


def match_point(point, rows, cmd):
    """The matching row with the smallest estimate (placements differ only in placement).

    MatchError naming the point if no row matches; SuiteError if the chosen row has no simulated
    time (raise SIMULATE).
    """
    matches = [r for r in rows if row_matches(point, r)]
    if not matches:
        raise MatchError(f"point {point['id']}: no plan row matches scheme "
                         f"{point['meshplan_scheme']} {json.dumps(point['selection'])} "
                         f"in: {shlex.join(cmd)}")
    best = min(matches, key=lambda r: r["time_s"])
    if best["simulated_s"] is None:
        raise SuiteError(f"point {point['id']}: matched row has no simulated time "
                         f"(increase SIMULATE): {shlex.join(cmd)}")
    return best


def signed_error(predicted, measured):
    """predicted / measured - 1 (negative: predicted too fast)."""
    return predicted / measured - 1.0


def evaluate_group(meshplan, key, pts, cluster_files=None):
    """Run meshplan for one group and return (command, [record per point]).

    cluster_files maps a cluster name to the file to plan on instead (leave-one-source-out's
    refitted values); records keep the name. A record holds the point's id, source, cluster, scheme, selection, matched parameters, and
    measured/estimate/simulated seconds with signed errors.
    """
    cluster = key[-1]
    schemes = list(dict.fromkeys(p["meshplan_scheme"] for p in pts))
    cmd = plan_command(meshplan, key, (cluster_files or {}).get(cluster, cluster), schemes)
    rows = parse_plan_csv(run_meshplan(cmd), cmd)
    records = []
    for p in pts:
        row = match_point(p, rows, cmd)
        meas = measured_seconds(p)
        records.append({
            "id": p["id"], "source": p["source"], "cluster": cluster, "group": group_label(key),
            "scheme": p["meshplan_scheme"], "selection": p["selection"],
            "parameters": row["parameters"], "measured_s": meas,
            "estimate_s": row["time_s"], "simulated_s": row["simulated_s"],
            "estimate_error": signed_error(row["time_s"], meas),
            "simulated_error": signed_error(row["simulated_s"], meas),
        })
    return cmd, records


def evaluate_all(meshplan, groups, cluster_files=None):
    """Evaluate every group (a few at a time); returns ([commands], [records]) in group order."""
    workers = max(1, min(4, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(evaluate_group, meshplan, k, v, cluster_files)
                   for k, v in groups.items()]
        results = [f.result() for f in futures]
    return [c for c, _ in results], [r for _, rs in results for r in rs]


# ----------------------------------------------------------------------------- statistics

def error_stats(records, field):
    """{n, median_abs, max_abs, too_fast} of records[field] (a signed error); None fields if empty."""
    errs = [r[field] for r in records]
    if not errs:
        return {"n": 0, "median_abs": None, "max_abs": None, "too_fast": 0}
    return {"n": len(errs), "median_abs": statistics.median(abs(e) for e in errs),
            "max_abs": max(abs(e) for e in errs), "too_fast": sum(1 for e in errs if e < 0)}


def summarize(records):
    """Summary per subset (all, long > SHORT_MS, short <= SHORT_MS) and per source plus overall."""
    subsets = {
        "all": records,
        "long": [r for r in records if r["measured_s"] * 1e3 > SHORT_MS],
        "short": [r for r in records if r["measured_s"] * 1e3 <= SHORT_MS],
    }
    sources = list(dict.fromkeys(r["source"] for r in records))
    out = {}
    for name, recs in subsets.items():
        out[name] = {}
        for src in sources + ["overall"]:
            sel = recs if src == "overall" else [r for r in recs if r["source"] == src]
            out[name][src] = {"estimate": error_stats(sel, "estimate_error"),
                              "simulated": error_stats(sel, "simulated_error")}
    return out


def ranking_pairs(records):
    """Every pair in one workload group whose measured times differ by more than RANK_MIN_GAP.

    Each pair is (faster, slower) by measured time, with whether the estimate and the simulation
    put the faster one strictly first.
    """
    by_group = {}
    for r in records:
        by_group.setdefault((r["cluster"], r["group"]), []).append(r)
    pairs = []
    for recs in by_group.values():
        for i, a in enumerate(recs):
            for b in recs[i + 1:]:
                fast, slow = (a, b) if a["measured_s"] <= b["measured_s"] else (b, a)
                if slow["measured_s"] / fast["measured_s"] - 1.0 <= RANK_MIN_GAP:
                    continue
                pairs.append({"faster": fast, "slower": slow,
                              "estimate_ok": fast["estimate_s"] < slow["estimate_s"],
                              "simulated_ok": fast["simulated_s"] < slow["simulated_s"]})
    return pairs


def named_check(records, pick_a, pick_b):
    """Per group holding one record of kind a and one of kind b: is their predicted order right?

    pick_a/pick_b: record -> bool. Returns a list of {group, a, b, estimate_ok, simulated_ok},
    'ok' meaning the prediction puts the measured-faster of a and b strictly first (a predicted
    tie is wrong, as in ranking_pairs).
    """
    by_group = {}
    for r in records:
        by_group.setdefault(r["group"], []).append(r)
    out = []
    for grp, recs in by_group.items():
        aa = [r for r in recs if pick_a(r)]
        bb = [r for r in recs if pick_b(r)]
        for a in aa:
            for b in bb:
                fast, slow = (a, b) if a["measured_s"] < b["measured_s"] else (b, a)
                out.append({"group": grp, "a": a, "b": b,
                            "estimate_ok": fast["estimate_s"] < slow["estimate_s"],
                            "simulated_ok": fast["simulated_s"] < slow["simulated_s"]})
    return out


def ring_layout(layout):
    """Record predicate: a ring point with this layout in its selection."""
    return lambda r: r["scheme"] == "ring" and r["selection"].get("layout") == layout


# ----------------------------------------------------------------------------- output

def pct(x):
    """A fraction as a signed percentage with one decimal, or '-' for None."""
    return "-" if x is None else f"{100.0 * x:+.1f}%"


def apct(x):
    """A non-negative fraction as a percentage with one decimal, or '-' for None."""
    return "-" if x is None else f"{100.0 * x:.1f}%"


def ms(seconds):
    """Seconds as milliseconds, three decimals."""
    return f"{seconds * 1e3:.3f}"


def table(header, rows):
    """A Markdown table as a list of lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def render_points(records):
    """Markdown lines: one row per fidelity point."""
    rows = [[r["id"], r["cluster"], r["scheme"], f"`{r['parameters']}`", ms(r["measured_s"]),
             ms(r["estimate_s"]), ms(r["simulated_s"]), pct(r["estimate_error"]),
             pct(r["simulated_error"])] for r in records]
    return table(["id", "cluster", "scheme", "matched parameters", "measured ms", "estimate ms",
                  "simulated ms", "estimate err", "simulated err"], rows)


def render_summary(summary):
    """Markdown lines: one table per subset, a row per source and overall."""
    titles = {"all": "All fidelity points",
              "long": f"Points measured above {SHORT_MS:g} ms",
              "short": f"Points measured at or below {SHORT_MS:g} ms"}
    lines = []
    for name, per_src in summary.items():
        lines += ["", f"### {titles[name]}", ""]
        rows = []
        for src, s in per_src.items():
            e, m = s["estimate"], s["simulated"]
            rows.append([src, e["n"], apct(e["median_abs"]), apct(e["max_abs"]), e["too_fast"],
                         apct(m["median_abs"]), apct(m["max_abs"]), m["too_fast"]])
        lines += table(["source", "points", "estimate median abs", "estimate max abs",
                        "estimate too fast", "simulated median abs", "simulated max abs",
                        "simulated too fast"], rows)
    return lines


def render_ranking(pairs):
    """Markdown lines: counts of pairs in the measured order and every wrongly ordered pair."""
    n = len(pairs)
    lines = [f"Pairs in one workload group whose measured times differ by more than "
             f"{100 * RANK_MIN_GAP:g}%: {n}.", ""]
    for field, name in (("estimate_ok", "estimate"), ("simulated_ok", "simulation")):
        ok = sum(1 for p in pairs if p[field])
        share = f"{100.0 * ok / n:.1f}%" if n else "-"
        lines.append(f"- {name}: {ok} of {n} in the measured order ({share})")
    for field, name, col in (("estimate_ok", "estimate", "estimate_s"),
                             ("simulated_ok", "simulation", "simulated_s")):
        wrong = [p for p in pairs if not p[field]]
        lines += ["", f"Pairs the {name} orders wrongly: {len(wrong)}", ""]
        if wrong:
            lines += table(["measured faster", "measured ms", f"{name} ms", "measured slower",
                            "measured ms", f"{name} ms"],
                           [[p["faster"]["id"], ms(p["faster"]["measured_s"]),
                             ms(p["faster"][col]), p["slower"]["id"],
                             ms(p["slower"]["measured_s"]), ms(p["slower"][col])]
                            for p in wrong])
    return lines


def render_named(title, checks):
    """Markdown lines for one named ordering check (a vs b per group)."""
    lines = ["", f"### {title}", ""]
    if not checks:
        return lines + ["No group holds both."]
    rows = [[c["group"], c["a"]["id"], c["b"]["id"],
             f"{ms(c['a']['measured_s'])} / {ms(c['b']['measured_s'])}",
             f"{ms(c['a']['estimate_s'])} / {ms(c['b']['estimate_s'])}",
             f"{ms(c['a']['simulated_s'])} / {ms(c['b']['simulated_s'])}",
             "right" if c["estimate_ok"] else "WRONG",
             "right" if c["simulated_ok"] else "WRONG"] for c in checks]
    lines += table(["group", "a", "b", "measured ms a / b", "estimate ms a / b",
                    "simulated ms a / b", "estimate", "simulation"], rows)
    e = sum(c["estimate_ok"] for c in checks)
    s = sum(c["simulated_ok"] for c in checks)
    lines += ["", f"Right: estimate {e} of {len(checks)}, simulation {s} of {len(checks)}."]
    return lines


def render_kernel_points(points):
    """Markdown lines: the single-GPU kernel points, measured TFLOP/s only (from either unit)."""
    rows = [[p["id"], p["library"], p["mask"], p["pass"], p["seq_tokens"],
             f"{p['q_heads']}/{p['kv_heads']}", p["head_dim"],
             f"{fa_flops_per_gpu(p) / measured_seconds(p) / 1e12:.1f}"]
            for p in points]
    return table(["id", "library", "mask", "pass", "seq", "heads q/kv", "head dim",
                  "measured TFLOP/s (FA convention)"], rows)


def render(meta, records, summary, pairs, named, kernel_points, commands):
    """The whole Markdown report as one string."""
    out = ["# Published measurements against meshplan", "",
           f"meshplan: `{meta['meshplan']}`; points: `{meta['points']}`; "
           f"each point planned with the source's `--attention-kernel`; `--simulate {SIMULATE}`; "
           f"meshplan's stated model error (its plan table's ties): {apct(meta['model_error'])}.",
           f"{len(records)} fidelity points in {len(commands)} workload groups; "
           f"{len(kernel_points)} kernel points. Error = predicted / measured - 1 "
           f"(negative: predicted too fast).", "",
           "## Points", ""]
    out += render_points(records)
    out += ["", "## Summary"]
    out += render_summary(summary)
    out += ["", "## Ranking within workload groups", ""]
    out += render_ranking(pairs)
    for title, checks in named:
        out += render_named(title, checks)
    out += ["", "## Kernel points (single GPU, not context-parallel: listed, not predicted)", ""]
    out += render_kernel_points(kernel_points)
    out += ["", "## Commands", "", "One `meshplan plan` per workload group:", "", "```"]
    out += [shlex.join(c) for c in commands]
    out += ["```"]
    return "\n".join(out) + "\n"


def render_loso(rows, out_of_sample):
    """Markdown lines: each source's median |error| in and out of sample, and what was refit."""
    lines = ["", "## Leave one source out", "",
             "Every value fitted on a source's context-parallel points fitted again without them "
             "(bench/published_loso.py); the source's points predicted with those values.", ""]
    lines += table(["source", "points", "in-sample median abs", "out-of-sample median abs",
                    "values refit"],
                   [[r["source"], r["points"], apct(r["in_sample"]), apct(r["out_of_sample"]),
                     "; ".join(r["changes"]) or "none (nothing was fitted on it)"] for r in rows])
    overall = statistics.median(abs(r["estimate_error"]) for r in out_of_sample)
    lines += ["", f"Out of sample, all {len(out_of_sample)} points: median |error| "
                  f"{apct(overall)}."]
    return lines


def json_record(r):
    """A point record with plain JSON values (errors as signed fractions)."""
    return {k: r[k] for k in ("id", "source", "cluster", "group", "scheme", "selection",
                              "parameters", "measured_s", "estimate_s", "simulated_s",
                              "estimate_error", "simulated_error")}


def write_json(path, meta, records, summary, pairs, named, kernel_points, commands):
    """Write the report's data to path atomically (path.tmp, then os.replace)."""
    doc = {
        "meta": dict(meta, simulate=SIMULATE, short_ms=SHORT_MS, rank_min_gap=RANK_MIN_GAP,
                     error="predicted / measured - 1"),
        "points": [json_record(r) for r in records],
        "summary": summary,
        "ranking": {
            "pairs": len(pairs),
            "estimate_in_order": sum(p["estimate_ok"] for p in pairs),
            "simulated_in_order": sum(p["simulated_ok"] for p in pairs),
            "wrong": [{"faster": p["faster"]["id"], "slower": p["slower"]["id"],
                       "estimate_ok": p["estimate_ok"], "simulated_ok": p["simulated_ok"]}
                      for p in pairs if not (p["estimate_ok"] and p["simulated_ok"])],
        },
        "named_checks": {title: [{"group": c["group"], "a": c["a"]["id"], "b": c["b"]["id"],
                                  "estimate_ok": c["estimate_ok"],
                                  "simulated_ok": c["simulated_ok"]} for c in checks]
                         for title, checks in named},
        "kernel_points": [{"id": p["id"], "library": p["library"], "mask": p["mask"],
                           "pass": p["pass"], "seq_tokens": p["seq_tokens"],
                           "measured_tflops": p["measured"]} for p in kernel_points],
        "commands": [shlex.join(c) for c in commands],
    }
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise SuiteError(f"{path}: cannot write JSON ({e.strerror})") from e


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    """Command-line options (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meshplan", default=DEFAULT_MESHPLAN, help="meshplan binary")
    ap.add_argument("--points", default=DEFAULT_POINTS, help="published points CSV")
    ap.add_argument("--json", metavar="FILE", help="also write per-point rows and summary as JSON")
    ap.add_argument("--max-median", type=float, metavar="F",
                    help="exit 1 if the overall median |error| of the estimate exceeds F (0.12 = 12%%)")
    ap.add_argument("--leave-one-source-out", action="store_true",
                    help="also refit every fitted value without each source in turn and report "
                         "that source's out-of-sample median (bench/published_loso.py)")
    ap.add_argument("--max-loso-median", type=float, metavar="F",
                    help="with --leave-one-source-out: exit 1 if the out-of-sample median "
                         "|error| over all points exceeds F")
    ap.add_argument("--check-model-error", action="store_true",
                    help="exit 1 if that median exceeds the model error meshplan's plan table "
                         "states for its ties")
    return ap.parse_args(argv)


def main(argv=None):
    """Run the suite; returns the exit status (0, 1 or 2)."""
    args = parse_args(argv)
    try:
        points = load_points(args.points)
        check_meshplan(args.meshplan)
        model_error = stated_model_error(args.meshplan)
        kernel_points = [p for p in points if is_kernel_point(p)]
        fidelity = [p for p in points if not is_kernel_point(p)]
        commands, records = evaluate_all(args.meshplan, group_points(fidelity))
        summary = summarize(records)
        pairs = ranking_pairs(records)
        named = [
            ("ring vs allgather-kv on H100",
             named_check([r for r in records if r["source"] == "MAGI"],
                         lambda r: r["scheme"] == "ring", lambda r: r["scheme"] == "allgather-kv")),
            ("zigzag vs contiguous ring",
             named_check(records, ring_layout("zigzag"), ring_layout("contiguous"))),
            ("zigzag vs striped ring",
             named_check(records, ring_layout("zigzag"), ring_layout("striped"))),
        ]
        meta = {"meshplan": args.meshplan, "points": args.points, "model_error": model_error}
        sys.stdout.write(render(meta, records, summary, pairs, named, kernel_points, commands))
        if args.leave_one_source_out:
            import published_loso  # bench/, beside this file

            def evaluate(pts, cluster_files):
                return evaluate_all(args.meshplan, group_points(pts), cluster_files)[1]

            loso_rows, loso_records = published_loso.leave_one_source_out(
                evaluate, fidelity, cluster_for)
            loso_median = statistics.median(abs(r["estimate_error"]) for r in loso_records)
            sys.stdout.write("\n".join(render_loso(loso_rows, loso_records)) + "\n")
        if args.json:
            write_json(args.json, meta, records, summary, pairs, named, kernel_points, commands)
    except SuiteError as e:
        print(f"published.py: {e}", file=sys.stderr)
        return 2
    except MatchError as e:
        print(f"published.py: {e}", file=sys.stderr)
        return 1
    median = summary["all"]["overall"]["estimate"]["median_abs"]
    if args.leave_one_source_out and args.max_loso_median is not None and \
            loso_median > args.max_loso_median:
        print(f"published.py: out-of-sample median |error| {100 * loso_median:.1f}% exceeds "
              f"--max-loso-median {100 * args.max_loso_median:.1f}%", file=sys.stderr)
        return 1
    if args.max_median is not None and median is not None and median > args.max_median:
        print(f"published.py: overall median |error| of the estimate {100 * median:.1f}% exceeds "
              f"--max-median {100 * args.max_median:.1f}%", file=sys.stderr)
        return 1
    if args.check_model_error and median is not None and median > model_error:
        print(f"published.py: overall median |error| of the estimate {100 * median:.1f}% exceeds "
              f"the model error meshplan states for its ties ({100 * model_error:.1f}%, "
              f"planner/equivalence.h kModelErrorFraction)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
