#!/usr/bin/env python3
"""Per-library attention kernel curves for a topology file, from kernel times measured on a GPU.

Reads the JSON that bench/torch_sdpa_bench.py writes on a GPU machine (rows of backend, n, d, mask,
pass, heads, ms, tflops; FLOPs as FlashAttention counts them: forward 4 n^2 d heads, backward 2.5x,
causal half) and prints, for each backend measured, the [gpu.attention_kernels.NAME] table of
topologies/README.md with the device, versions, date and command as its source:

  efficiency           the full forward block's rate at head dim --head-dim over --peak-tflops, by n
  backward_rate_ratio  median over n of the full backward's rate over the full forward's
  pair_overhead_flops  k of the head-dim term, from the full forward at two head dims d1 > d2:
                       r = rate(d1) / rate(d2) = (1 + k / 4 d2) / (1 + k / 4 d1), so
                       k = 4 d1 d2 (r - 1) / (d1 - r d2)  (0 when r gives none: the rate equal or
                       falling with d); the median over n
  cut_row_extra_pairs  c of the causal cut, from the causal forward against the full one at each n:
                       a causal n x n block has n (n + 1) / 2 visible pairs and n - 1 cut rows, each
                       costing c more pairs at the full block's rate, so
                       c = (t_causal / t_full x n^2 - n (n + 1) / 2) / (n - 1) (at least 0); the
                       median over n

torch's SDPA backends map to meshplan's library names: flash -> fa2 (torch's flash backend is
FlashAttention-2), cudnn -> cudnn; rows of the flash_attn package's FA3 interface would be fa3.

Usage (the first command on the GPU machine, the second anywhere):
  python3 bench/torch_sdpa_bench.py --sizes 1024,2048,4096,8192,16384,32768,65536 --dims 64,128 \\
      --json sdpa.json
  python3 bench/attention_curves.py sdpa.json --peak-tflops 989 [--head-dim 128] [--date 2026-11-27]

Exit status: 0, or 2 with one line on stderr for a missing or malformed file, or rows too few to
fit a table. Python 3 standard library only.
"""
import argparse
import datetime
import json
import statistics
import sys

LIBRARY_OF_BACKEND = {"flash": "fa2", "cudnn": "cudnn", "fa2": "fa2", "fa3": "fa3"}


class CurveError(Exception):
    """Input the curves cannot be made from; main prints it as one line and exits 2."""


def rates(rows, backend):
    """{(n, d, mask, pass): TFLOP/s} of one backend's measured rows (rows with an error skipped)."""
    out = {}
    for r in rows:
        if r.get("backend") != backend or "error" in r or not r.get("tflops"):
            continue
        out[(int(r["n"]), int(r["d"]), r["mask"], r["pass"])] = float(r["tflops"])
    return out


def pair_overhead(rate_d1, rate_d2, d1, d2):
    """k from the useful rates at head dims d1 > d2 (see the module's docstring); 0 when none."""
    r = rate_d1 / rate_d2
    denominator = d1 - r * d2
    if r <= 1 or denominator <= 0:
        return 0.0
    return 4.0 * d1 * d2 * (r - 1) / denominator


def cut_row_pairs(t_causal_over_full, n):
    """c from a causal n x n block's time over the full block's (see the module's docstring)."""
    if n < 2:
        return 0.0
    c = (t_causal_over_full * n * n - n * (n + 1) / 2.0) / (n - 1)
    return max(c, 0.0)


def library_table(rows, backend, peak_tflops, head_dim):
    """The table's values for one backend: dict of efficiency, backward_rate_ratio,
    pair_overhead_flops, cut_row_extra_pairs; CurveError when no full forward row at head_dim."""
    rate = rates(rows, backend)
    sizes = sorted({n for (n, d, mask, pss) in rate if d == head_dim and mask == "full" and pss == "fwd"})
    if not sizes:
        raise CurveError(f"backend {backend}: no full forward row at head dim {head_dim}")
    efficiency = [[n, round(rate[(n, head_dim, "full", "fwd")] / peak_tflops, 3)] for n in sizes]
    backward = [rate[(n, head_dim, "full", "bwd")] / rate[(n, head_dim, "full", "fwd")]
                for n in sizes if (n, head_dim, "full", "bwd") in rate]
    other_dims = sorted({d for (n, d, mask, pss) in rate if d < head_dim})
    overhead = []
    if other_dims:
        d2 = other_dims[-1]
        overhead = [pair_overhead(rate[(n, head_dim, "full", "fwd")], rate[(n, d2, "full", "fwd")],
                                  head_dim, d2)
                    for n in sizes if (n, d2, "full", "fwd") in rate]
    # Time ratio from rates of useful FLOPs: a causal block's FLOPs are half the full one's, so
    # t_causal / t_full = (1/2) x rate_full / rate_causal.
    cut = [cut_row_pairs(0.5 * rate[(n, head_dim, "full", "fwd")] / rate[(n, head_dim, "causal", "fwd")], n)
           for n in sizes if (n, head_dim, "causal", "fwd") in rate]
    return {
        "efficiency": efficiency,
        "backward_rate_ratio": round(statistics.median(backward), 3) if backward else None,
        "pair_overhead_flops": round(statistics.median(overhead)) if overhead else None,
        "cut_row_extra_pairs": round(statistics.median(cut)) if cut else None,
    }


def render(measurement, tables, peak_tflops, head_dim, date, command):
    """The TOML text of every table, each with its provenance."""
    device = measurement.get("device", "unknown device")
    versions = f"torch {measurement.get('torch', '?')}, cuDNN {measurement.get('cudnn', '?')}"
    out = []
    for library, t in tables.items():
        out.append(f"# Measured {date} on {device} ({versions}); bf16, rates over a peak of "
                   f"{peak_tflops:g} TFLOP/s; {command}")
        out.append(f"[gpu.attention_kernels.{library}]")
        out.append("efficiency = [" + ", ".join(f"[{n}, {e}]" for n, e in t["efficiency"]) + "]")
        out.append(f"head_dim = {head_dim}")
        for key in ("backward_rate_ratio", "pair_overhead_flops", "cut_row_extra_pairs"):
            if t[key] is not None:
                out.append(f"{key} = {t[key]}")
        out.append(f'source = "measured {date} on {device}, {versions} (bench/torch_sdpa_bench.py, '
                   f'bench/attention_curves.py)"')
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="bench/torch_sdpa_bench.py --json output")
    ap.add_argument("--peak-tflops", type=float, required=True, help="the GPU's dense bf16 peak (H100/H200 SXM: 989)")
    ap.add_argument("--head-dim", type=int, default=128, help="the head dim of the efficiency curve")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    args = ap.parse_args(argv)
    try:
        if not args.peak_tflops > 0:
            raise CurveError("--peak-tflops: must be positive")
        try:
            with open(args.json, encoding="utf-8") as f:
                measurement = json.load(f)
        except OSError as e:
            raise CurveError(f"{args.json}: cannot read ({e.strerror})") from e
        except json.JSONDecodeError as e:
            raise CurveError(f"{args.json}: not JSON ({e.msg}, line {e.lineno})") from e
        rows = measurement.get("rows") if isinstance(measurement, dict) else None
        if not isinstance(rows, list):
            raise CurveError(f"{args.json}: no \"rows\" list (is it bench/torch_sdpa_bench.py --json output?)")
        tables = {}
        for backend in sorted({r.get("backend") for r in rows if isinstance(r, dict)} - {None}):
            if backend not in LIBRARY_OF_BACKEND:
                continue
            try:
                tables[LIBRARY_OF_BACKEND[backend]] = library_table(rows, backend, args.peak_tflops, args.head_dim)
            except CurveError as e:
                print(f"attention_curves: note: {e}", file=sys.stderr)
        if not tables:
            raise CurveError(f"{args.json}: no backend with a full forward row at head dim {args.head_dim}")
        command = "python3 bench/attention_curves.py " + " ".join(argv if argv is not None else sys.argv[1:])
        sys.stdout.write(render(measurement, tables, args.peak_tflops, args.head_dim, args.date, command))
        return 0
    except CurveError as e:
        print(f"attention_curves: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
