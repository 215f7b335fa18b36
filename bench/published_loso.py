"""Leave-one-source-out for the published-measurement suite (bench/published.py
--leave-one-source-out; issue 46 item 8).

Every value of the GPU catalog that was fitted on the suite's context-parallel points is listed in
FITTED with the sources it was fitted on and how it is fitted. For each source S, every value
fitted on S is fitted again on the other sources only (the same procedure, on what remains of its
data), or, when nothing remains, takes the transfer a user of a cluster nobody fitted would get:
the same library's value from another GPU entry (FALLBACK). S's points are then predicted with
those values. That is the model's error on a source it has not seen, and the figure to quote for a
new cluster.

Single-GPU kernel benchmarks (MAGI-K; this project's own GPU runs) stay in every fold: they are
the kernel curves a catalog entry ships, measured on one GPU, which a new user has or can take in
minutes (bench/torch_sdpa_bench.py); what is left out is a source's context-parallel points.

Python 3.11+ standard library (tomllib).
"""

import os
import statistics
import tempfile
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOLOGIES = os.path.join(REPO, "topologies")

# Hopper entries share the framework's ring merge (ring_step_partial_passes), one value for fa3,
# fa2 and cudnn ("as fitted for fa3" in the files).
HOPPER = ("h100-sxm5", "h800-sxm5", "h200-sxm")
HOPPER_LIBRARIES = ("fa3", "fa2", "cudnn")

# Fitted in this order (the ring merge after the kernel terms it sits on). A fitted value: the
# (entry, library, key) places it sets; the sources it was fitted on; which of
# their points it is fitted on (a predicate on a point); a grid of candidate values; `scale`: the
# value multiplies the entry's efficiency curve instead of setting `key`.
FITTED = [
    {"name": "Hopper ring_step_partial_passes",
     "places": [(e, lib, "ring_step_partial_passes") for e in HOPPER for lib in HOPPER_LIBRARIES],
     "sources": ("MAGI",),
     "fit_points": lambda p: p["meshplan_scheme"] == "ring",
     "grid": [float(v) for v in range(0, 25)]},
    {"name": "A100 fa2 curve level",
     "places": [("a100-sxm4-80gb", "fa2", "efficiency")],
     "scale": True,
     "sources": ("USP-A", "USP-G"),
     "fit_points": lambda p: p["id"] in ("USP-G.fwd.u8", "USP-A.a2.1"),
     "grid": [round(0.80 + 0.01 * i, 2) for i in range(41)]},
    {"name": "A100 fa2 backward_rate_ratio",
     "places": [("a100-sxm4-80gb", "fa2", "backward_rate_ratio")],
     "sources": ("USP-G",),
     "fit_points": lambda p: p["id"] in ("USP-G.fwd+bwd.u8",),
     "grid": [round(0.70 + 0.01 * i, 2) for i in range(41)]},
    {"name": "A100 fa2 ring_step_partial_passes",
     "places": [("a100-sxm4-80gb", "fa2", "ring_step_partial_passes")],
     "sources": ("USP-A", "USP-G"),
     "fit_points": lambda p: p["meshplan_scheme"] == "ring",
     "grid": [float(v) for v in range(0, 25)]},
]

# Where a value's fit data is all left out: the same key of the same library on another entry.
FALLBACK = {
    "Hopper ring_step_partial_passes": ("a100-sxm4-80gb", "fa2", "ring_step_partial_passes"),
    "A100 fa2 ring_step_partial_passes": ("h100-sxm5", "fa2", "ring_step_partial_passes"),
    "A100 fa2 curve level": None,  # keeps its value: no other entry's level is an A100's
    "A100 fa2 backward_rate_ratio": ("h100-sxm5", "fa2", "backward_rate_ratio"),
}


def load_toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def catalog_entry(cluster):
    """The GPU catalog name a shipped cluster names ('' when it describes its GPU itself)."""
    gpu = load_toml(os.path.join(TOPOLOGIES, cluster + ".toml")).get("gpu", {})
    return gpu if isinstance(gpu, str) else gpu.get("catalog", "")


def entry_value(entry, library, key):
    return load_toml(os.path.join(TOPOLOGIES, "gpus", entry + ".toml"))["gpu"][
        "attention_kernels"][library][key]


def toml_number(x):
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


def override_text(entry, values):
    """TOML tables laying `values` ({(library, key): value}; key 'efficiency' with a scale) over
    the entry's [gpu.attention_kernels.LIBRARY] tables."""
    by_library = {}
    for (library, key), value in values.items():
        by_library.setdefault(library, {})[key] = value
    out = []
    for library, keys in sorted(by_library.items()):
        out.append(f"\n[gpu.attention_kernels.{library}]")
        for key, value in sorted(keys.items()):
            if key == "efficiency":
                curve = entry_value(entry, library, "efficiency")
                points = ", ".join(f"[{n}, {min(1.0, e * value):.6g}]" for n, e in curve)
                out.append(f"efficiency = [{points}]")
            else:
                out.append(f"{key} = {toml_number(value)}")
    return "\n".join(out) + "\n"


class Overrides:
    """Cluster files for one assignment of fitted values, written into a temporary directory:
    the shipped file with the entry's changed keys laid over its catalog entry."""

    def __init__(self, directory):
        self.directory = directory
        self.count = 0

    def cluster_files(self, clusters, assignment):
        """{cluster: path} for the clusters whose entry `assignment` ({(entry, library, key):
        value}) changes; others keep their shipped name."""
        files = {}
        for cluster in clusters:
            entry = catalog_entry(cluster)
            values = {(lib, key): v for (e, lib, key), v in assignment.items() if e == entry}
            if not values:
                continue
            with open(os.path.join(TOPOLOGIES, cluster + ".toml"), encoding="utf-8") as f:
                text = f.read()
            self.count += 1
            path = os.path.join(self.directory, f"{cluster}.{self.count}.toml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + override_text(entry, values))
            files[cluster] = path
        return files


def median_abs(records):
    errs = [abs(r["estimate_error"]) for r in records]
    return statistics.median(errs) if errs else None


def leave_one_source_out(evaluate, fidelity, cluster_for):
    """Fold per source. `evaluate(points, cluster_files)` returns the records of `points` planned
    with those cluster files. Returns (per-source rows, out-of-sample records)."""
    sources = list(dict.fromkeys(p["source"] for p in fidelity))
    clusters = sorted({cluster_for(p) for p in fidelity})
    rows, out_of_sample = [], []
    with tempfile.TemporaryDirectory(prefix="meshplan_loso_") as tmp:
        overrides = Overrides(tmp)
        in_sample = {r["id"]: r for r in evaluate(fidelity, {})}
        for left_out in sources:
            assignment, changes = {}, []
            for value in FITTED:
                if left_out not in value["sources"]:
                    continue
                remaining = [p for p in fidelity
                             if p["source"] in value["sources"] and p["source"] != left_out
                             and value["fit_points"](p)]
                if remaining:
                    best = None
                    for candidate in value["grid"]:
                        trial = dict(assignment)
                        for place in value["places"]:
                            trial[place] = candidate
                        err = median_abs(evaluate(remaining,
                                                  overrides.cluster_files(clusters, trial)))
                        if best is None or err < best[1] - 1e-12:
                            best = (candidate, err)
                    chosen, how = best[0], f"refit on {len(remaining)} points of " + ", ".join(
                        s for s in value["sources"] if s != left_out)
                else:
                    fallback = FALLBACK[value["name"]]
                    if fallback is None:
                        continue
                    chosen = entry_value(*fallback)
                    how = f"no data left: {fallback[0]}'s {fallback[1]} value"
                for place in value["places"]:
                    assignment[place] = chosen
                changes.append(f"{value['name']} -> {toml_number(chosen)} ({how})")
            held = [p for p in fidelity if p["source"] == left_out]
            predicted = evaluate(held, overrides.cluster_files(clusters, assignment))
            out_of_sample += predicted
            rows.append({"source": left_out, "points": len(held),
                         "in_sample": median_abs([in_sample[p["id"]] for p in held]),
                         "out_of_sample": median_abs(predicted), "changes": changes})
    return rows, out_of_sample
