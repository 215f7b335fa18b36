#!/usr/bin/env python3
"""Measures on one GPU what the cluster model needs (issue 50), torch on the device as the library:

  occupancy  torch SDPA's flash (FlashAttention-2) and cuDNN backends, forward and backward, full
             and causal, d = 64 and 128, heads 1-64 x batch 1-4 x 1K-64K tokens (MHA, bf16); the
             rate by batch x heads, to check the occupancy model (core/cost/kernel_occupancy.h)
             point by point; nothing is fitted on these rows.
  merge      the ring's per-step out/LSE correction as the two framework styles write it with torch
             ops: the sigmoid form (out -= sigmoid(lse_b - lse) (out - out_b); lse -= logsigmoid(lse
             - lse_b)) and the exp form (lse' = logaddexp; out = out e^(lse - lse') + out_b e^(lse_b -
             lse')), the partial in bf16 or fp32, by rows and heads at d = 128; the time, and the HBM
             passes over the fp32 output it equals at the copy bandwidth measured in the same run.
  share      an attention call's slowdown while a copy kernel on another stream holds 1-32 SMs (a
             Triton grid-stride copy of that many programs, as an NCCL channel is one CTA), and the
             copy's own rate: the per-channel cost of an overlapped ring step.
  gemm       torch.matmul (bf16) and torch._scaled_mm (fp8 e4m3) at the projections and MLP of the
             shipped models (models/*.json) under TP 1, 2, 4, 8 at --gemm-tokens tokens, and
             RMSNorm, rotary and SwiGLU as torch ops at their bytes.

Every timing is the median of a time-bounded loop (triton.testing.do_bench, CUDA events); the share
part times the attention call alone and beside the copy by one loop of back-to-back calls. Points are
sized before anything runs: `--plan` prints them and the device seconds they should take, without
torch, so a lent GPU's 15 minutes can be planned here. Each call's FLOPs are capped
(--max-call-tflop): the large-n, many-head corner is full occupancy, measured already
(bench/torch_sdpa_bench.py), and the occupancy question lives at few heads.

  python3 bench/gpu_model_probe.py --plan [--parts occupancy,merge,share,gemm]
  python3 bench/gpu_model_probe.py --out DIR [--parts ...]    (on the GPU machine)
  python3 bench/gpu_probe_catalog.py DIR/probe.json ...          (anywhere: report, catalog)

Writes DIR/probe.json (device, driver, versions, command, the rows of each part) after each part, so
a call stopped at its limit keeps what it measured. Exit status: 0; 2 with one line on stderr for
bad arguments or no CUDA device (except with --plan).
"""
import argparse
import datetime
import json
import os
import statistics
import sys

PARTS = ("occupancy", "merge", "share", "gemm")
HEADS = (1, 2, 4, 5, 8, 16, 32, 64)
BATCHES = (1, 2, 4)
TOKENS = (1024, 4096, 16384, 65536)
DIMS = (64, 128)
BACKENDS = ("flash", "cudnn")
MERGE_ROWS = (4096, 16384, 65536)
MERGE_HEADS = (8, 32)
SHARE_SMS = (0, 1, 2, 4, 8, 16, 32)
SHARE_CALLS = 10  # attention calls per timed loop of the share part
SHARE_LOOPS = 5  # loops per figure (the median is kept)
TP_DEGREES = (1, 2, 4, 8)
# Planning rates (leads, not measurements): a sized point's seconds are its FLOPs at these and
# its bytes at the copy bandwidth, plus do_bench's bounded loop.
PLAN_ATTENTION_TFLOPS = 300.0
PLAN_GEMM_TFLOPS = 600.0
PLAN_HBM_GBPS = 4000.0
WARMUP_MS, REPEAT_MS = 5, 20
POINT_OVERHEAD_S = 0.05  # tensor set-up, the first call, do_bench's estimate and L2 flushes
CUDNN_GRAPH_S = 0.3  # cuDNN builds an execution plan for each new shape on its first call


def attention_flops(n, d, batch_heads, causal, backward):
    """FlashAttention's count: forward 4 n^2 d per head, backward 2.5x, causal half."""
    f = 4.0 * n * n * d * batch_heads * (2.5 if backward else 1.0)
    return f * (0.5 if causal else 1.0)


def occupancy_points(max_call_flops):
    points = []
    for backend in BACKENDS:
        for d in DIMS:
            for n in TOKENS:
                for heads in HEADS:
                    for batch in BATCHES:
                        for causal in (False, True):
                            for backward in (False, True):
                                f = attention_flops(n, d, heads * batch, causal, backward)
                                if f > max_call_flops:
                                    continue
                                points.append({"part": "occupancy", "backend": backend, "d": d,
                                               "n": n, "heads": heads, "batch": batch,
                                               "mask": "causal" if causal else "full",
                                               "pass": "bwd" if backward else "fwd", "flops": f})
    return points


def merge_points():
    # `compile`: eager torch ops, or the same function under torch.jit.script as USP's benchmarks
    # (yunchang b93c30e, yunchang/ring/utils.py) and ring-flash-attention (8996282,
    # ring_flash_attn/utils.py) run it, where TorchScript's fuser may fuse the element-wise ops.
    return [{"part": "merge", "form": form, "compile": compile_, "rows": rows, "heads": heads,
             "d": 128, "partial_dtype": dtype}
            for form in ("sigmoid", "exp") for compile_ in ("eager", "script")
            for rows in MERGE_ROWS for heads in MERGE_HEADS for dtype in ("bf16", "fp32")]


def share_points():
    # One attention call of about 20 ms (32K tokens, 16 heads, d = 128, full, forward) beside a
    # copy on 0 (alone) to 32 SMs, for each backend.
    return [{"part": "share", "backend": backend, "n": 32768, "heads": 16, "d": 128, "sms": sms,
             "flops": attention_flops(32768, 128, 16, False, False)}
            for backend in BACKENDS for sms in SHARE_SMS]


def model_shapes(models_dir):
    """(model, name, m, k, n) of each projection and MLP matrix per TP degree, tokens as m=0."""
    shapes = []
    for file in sorted(os.listdir(models_dir)):
        if not file.endswith(".json"):
            continue
        with open(os.path.join(models_dir, file)) as f:
            cfg = json.load(f)
        h, inter = cfg.get("hidden_size"), cfg.get("intermediate_size")
        hq = cfg["num_attention_heads"]
        hkv = cfg.get("num_key_value_heads", hq)
        d = cfg.get("head_dim", h // hq if h else 0)
        if not h or not inter:
            continue
        gated = cfg.get("model_type") not in ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon")
        for tp in TP_DEGREES:
            if hkv % tp and tp % hkv:
                continue
            kv_local = max(hkv // tp, 1)
            shapes += [(cfg.get("_name", file[:-5]), tp, "qkv", h, (hq // tp + 2 * kv_local) * d),
                       (cfg.get("_name", file[:-5]), tp, "out", hq // tp * d, h),
                       (cfg.get("_name", file[:-5]), tp, "mlp_in", h,
                        (2 if gated else 1) * inter // tp),
                       (cfg.get("_name", file[:-5]), tp, "mlp_out", inter // tp, h)]
    return shapes


def gemm_points(models_dir, tokens):
    seen, points = set(), []
    for model, tp, name, k, n in model_shapes(models_dir):
        for dtype in ("bf16", "fp8"):
            key = (tokens, k, n, dtype)
            if key in seen:  # shared shapes are timed once and listed for each model
                continue
            seen.add(key)
            points.append({"part": "gemm", "model": model, "tp": tp, "matrix": name, "m": tokens,
                           "k": k, "n": n, "dtype": dtype, "flops": 2.0 * tokens * k * n})
    for model, tp, name, k, n in model_shapes(models_dir):
        if tp == 1 and name == "qkv":  # element-wise work at the model's hidden size
            for op in ("rmsnorm", "rotary", "swiglu"):
                points.append({"part": "elementwise", "model": model, "op": op, "tokens": tokens,
                               "hidden": k})
    return points


def planned_seconds(point):
    """Device seconds a point should take: do_bench's bounded loops, or a call that outlasts them."""
    if point["part"] in ("occupancy", "share", "gemm"):
        rate = PLAN_GEMM_TFLOPS if point["part"] == "gemm" else PLAN_ATTENTION_TFLOPS
        call_s = point["flops"] / (rate * 1e12)
        first = CUDNN_GRAPH_S if point.get("backend") == "cudnn" else 0.0
        if point["part"] == "share":
            # Alone, then beside the copy (whose rate do_bench takes once): a warm call and
            # SHARE_LOOPS x SHARE_CALLS timed ones each, and the copies run on after each loop
            # beside (they are sized to outlast it twice over) for as long again.
            calls = 2 * (1 + SHARE_LOOPS * SHARE_CALLS) + SHARE_LOOPS * SHARE_CALLS
            return calls * call_s + (WARMUP_MS + REPEAT_MS) / 1e3 + POINT_OVERHEAD_S + first
        return max((WARMUP_MS + REPEAT_MS) / 1e3, 8 * call_s) + POINT_OVERHEAD_S + first
    return (WARMUP_MS + REPEAT_MS) / 1e3 + POINT_OVERHEAD_S


def plan(args):
    parts = args.parts
    points = []
    if "occupancy" in parts:
        points += occupancy_points(args.max_call_tflop * 1e12)
    if "merge" in parts:
        points += merge_points()
    if "share" in parts:
        points += share_points()
    if "gemm" in parts:
        points += gemm_points(args.models, args.gemm_tokens)
    return points


def summarize_plan(points):
    by_part = {}
    for p in points:
        n, s = by_part.get(p["part"], (0, 0.0))
        by_part[p["part"]] = (n + 1, s + planned_seconds(p))
    lines = [f"{part:12s} {n:5d} points  {s:7.1f} s" for part, (n, s) in by_part.items()]
    total = sum(s for _, s in by_part.values())
    lines.append(f"{'total':12s} {len(points):5d} points  {total:7.1f} s of device time, planned")
    return "\n".join(lines), total


# ---- measurement (GPU machine only) ----

def run_occupancy(torch, F, do_bench, sdpa, p):
    dev, bf16 = "cuda", torch.bfloat16
    shape = (p["batch"], p["heads"], p["n"], p["d"])
    q, k, v = (torch.randn(shape, device=dev, dtype=bf16, requires_grad=p["pass"] == "bwd")
               for _ in range(3))
    causal = p["mask"] == "causal"
    with sdpa(p["backend"]):
        if p["pass"] == "fwd":
            def fn():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            dout = torch.randn_like(out)

            def fn():
                torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        ms = do_bench(fn, warmup=WARMUP_MS, rep=REPEAT_MS, return_mode="median")
    return {"ms": ms, "tflops": p["flops"] / (ms * 1e-3) / 1e12}


def copy_gbps(torch, do_bench):
    """Device-to-device copy bandwidth, bytes read plus written (the merge's passes are counted in
    these bytes)."""
    a = torch.randn(1 << 29, device="cuda", dtype=torch.float32)  # 2 GiB, far over the L2
    b = torch.empty_like(a)
    ms = do_bench(lambda: b.copy_(a), warmup=WARMUP_MS, rep=REPEAT_MS, return_mode="median")
    return 2 * a.numel() * 4 / (ms * 1e-3) / 1e9


def run_merge(torch, F, do_bench, p, hbm_gbps):
    rows, heads, d = p["rows"], p["heads"], p["d"]
    f32 = torch.float32
    pdt = torch.bfloat16 if p["partial_dtype"] == "bf16" else f32
    out = torch.randn(rows, heads, d, device="cuda", dtype=f32)
    lse = torch.randn(heads, rows, device="cuda", dtype=f32)
    out_b = torch.randn(rows, heads, d, device="cuda", dtype=pdt)
    lse_b = torch.randn(heads, rows, device="cuda", dtype=f32)
    def sigmoid_merge(out, lse, out_b, lse_b):
        lb = lse_b.transpose(0, 1).unsqueeze(-1)
        la = lse.transpose(0, 1).unsqueeze(-1)
        new_out = out - torch.sigmoid(lb - la) * (out - out_b.to(torch.float32))
        new_lse = lse - F.logsigmoid(lse - lse_b)
        return new_out, new_lse

    def exp_merge(out, lse, out_b, lse_b):
        new_lse = torch.logaddexp(lse, lse_b)
        la = (lse - new_lse).transpose(0, 1).unsqueeze(-1)
        lb = (lse_b - new_lse).transpose(0, 1).unsqueeze(-1)
        return out * torch.exp(la) + out_b.to(torch.float32) * torch.exp(lb), new_lse

    merge = sigmoid_merge if p["form"] == "sigmoid" else exp_merge
    if p.get("compile") == "script":
        merge = torch.jit.script(merge)  # fused, if at all, after do_bench's warm-up calls
    ms = do_bench(lambda: merge(out, lse, out_b, lse_b), warmup=WARMUP_MS, rep=REPEAT_MS,
                  return_mode="median")
    one_pass_bytes = rows * heads * d * 4  # the fp32 output read or written once
    return {"ms": ms, "passes": ms * 1e-3 * hbm_gbps * 1e9 / one_pass_bytes}


def make_copy_kernel(triton, tl):
    @triton.jit
    def grid_stride_copy(src, dst, n_elems, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr):
        start = tl.program_id(0) * BLOCK
        for base in range(start, n_elems, PROGRAMS * BLOCK):
            offs = base + tl.arange(0, BLOCK)
            keep = offs < n_elems
            tl.store(dst + offs, tl.load(src + offs, mask=keep), mask=keep)
    return grid_stride_copy


def back_to_back_ms(torch, fn, before=None):
    """Median over SHARE_LOOPS of the mean time of SHARE_CALLS back-to-back calls of fn between two
    CUDA events on the current stream, nothing between the calls (no L2 flush). `before` runs after
    the device is idle and before the first event (it enqueues the copy on its own stream). The
    attention call is timed alone and beside the copy by this one loop, so the ratio holds only what
    the copy takes from it (do_bench's flushed, single-call timing against an unflushed loop made
    a 'slowdown' under 1 in the 2026-11-30 run)."""
    fn()  # warm: the backend's plan is built outside the loop
    loops = []
    for _ in range(SHARE_LOOPS):
        torch.cuda.synchronize()
        if before is not None:
            before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(SHARE_CALLS):
            fn()
        end.record()
        torch.cuda.synchronize()
        loops.append(start.elapsed_time(end) / SHARE_CALLS)
    return statistics.median(loops)


def run_share(torch, F, do_bench, sdpa, kernel, p):
    shape = (1, p["heads"], p["n"], p["d"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa(p["backend"]):
        def attn():
            F.scaled_dot_product_attention(q, k, v)
        alone_ms = back_to_back_ms(torch, attn)
        if p["sms"] == 0:
            return {"ms": alone_ms, "slowdown": 1.0}
        block = 4096
        src = torch.randn(1 << 28, device="cuda", dtype=torch.float32)  # 1 GiB
        dst = torch.empty_like(src)
        side = torch.cuda.Stream()

        def copy():
            kernel[(p["sms"],)](src, dst, src.numel(), BLOCK=block, PROGRAMS=p["sms"])
        with torch.cuda.stream(side):
            copy_ms = do_bench(copy, warmup=WARMUP_MS, rep=REPEAT_MS, return_mode="median")
        # The copies outlast the loop: SHARE_CALLS attention calls, twice over.
        copies = max(1, int(2 * SHARE_CALLS * alone_ms / copy_ms) + 1)

        def start_copies():
            with torch.cuda.stream(side):
                for _ in range(copies):
                    copy()
        beside_ms = back_to_back_ms(torch, attn, before=start_copies)
    return {"ms": alone_ms, "beside_ms": beside_ms, "slowdown": beside_ms / alone_ms,
            "copy_gbps": 2 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9}


def run_gemm(torch, do_bench, p):
    m, k, n = p["m"], p["k"], p["n"]
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    if p["dtype"] == "bf16":
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt takes it
        one = torch.ones((), device="cuda", dtype=torch.float32)
        fn = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
    ms = do_bench(fn, warmup=WARMUP_MS, rep=REPEAT_MS, return_mode="median")
    return {"ms": ms, "tflops": p["flops"] / (ms * 1e-3) / 1e12}


def run_elementwise(torch, F, do_bench, p):
    t, h = p["tokens"], p["hidden"]
    bf16 = torch.bfloat16
    x = torch.randn(t, h, device="cuda", dtype=bf16)
    if p["op"] == "rmsnorm":
        w = torch.randn(h, device="cuda", dtype=bf16)
        fn = lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf16) * w  # noqa: E731
        bytes_ = 2 * t * h * 2
    elif p["op"] == "rotary":
        cos, sin = (torch.randn(t, h // 2, device="cuda", dtype=bf16) for _ in range(2))

        def fn():
            x1, x2 = x[:, : h // 2], x[:, h // 2:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        bytes_ = 2 * t * h * 2 + 2 * t * h // 2 * 2
    else:
        g = torch.randn(t, h, device="cuda", dtype=bf16)
        fn = lambda: F.silu(g) * x  # noqa: E731
        bytes_ = 3 * t * h * 2
    ms = do_bench(fn, warmup=WARMUP_MS, rep=REPEAT_MS, return_mode="median")
    return {"ms": ms, "bytes": bytes_, "gbps": bytes_ / (ms * 1e-3) / 1e9}


def versions(torch):
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "sm_count": torch.cuda.get_device_properties(0).multi_processor_count}
    try:
        import subprocess
        info["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["driver"] = "unknown"
    return info


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def measure(args, points):
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl
    from triton.testing import do_bench
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        print("gpu_model_probe: no CUDA device (use --plan to size the run here)", file=sys.stderr)
        return 2
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}

    def sdpa(name):
        return sdpa_kernel([backends[name]])
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "probe.json")
    doc = {"date": datetime.date.today().isoformat(), "command": " ".join(sys.argv),
           **versions(torch), "rows": []}
    doc["copy_gbps"] = copy_gbps(torch, do_bench)
    print(f"{doc['device']} ({doc['sm_count']} SMs), driver {doc['driver']}, torch {doc['torch']}, "
          f"cuDNN {doc['cudnn']}; copy {doc['copy_gbps']:.0f} GB/s", flush=True)
    kernel = make_copy_kernel(triton, tl)
    part = None
    for p in points:
        if p["part"] != part:
            if part is not None:
                write_json(path, doc)
            part = p["part"]
            print(f"-- {part}", flush=True)
        row = dict(p)
        try:
            if part == "occupancy":
                row.update(run_occupancy(torch, F, do_bench, sdpa, p))
            elif part == "merge":
                row.update(run_merge(torch, F, do_bench, p, doc["copy_gbps"]))
            elif part == "share":
                row.update(run_share(torch, F, do_bench, sdpa, kernel, p))
            elif part == "gemm":
                row.update(run_gemm(torch, do_bench, p))
            else:
                row.update(run_elementwise(torch, F, do_bench, p))
        except Exception as e:  # a backend that refuses a shape: recorded, the run goes on
            row["error"] = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        doc["rows"].append(row)
        torch.cuda.empty_cache()
    write_json(path, doc)
    errors = sum(1 for r in doc["rows"] if "error" in r)
    print(f"gpu_model_probe: {len(doc['rows'])} rows ({errors} refused) in {path}")
    return 0


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", action="store_true", help="print the points' planned device time")
    ap.add_argument("--out", default="", help="folder for probe.json (required to measure)")
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--max-call-tflop", type=float, default=10.0,
                    help="skip attention calls of more TFLOP (default 10: about 30 ms)")
    ap.add_argument("--gemm-tokens", type=int, default=8192)
    ap.add_argument("--models", default=os.path.join(here, "..", "models"))
    args = ap.parse_args(argv)
    args.parts = [s for s in args.parts.split(",") if s]
    bad = [s for s in args.parts if s not in PARTS]
    if bad:
        ap.exit(2, f"gpu_model_probe: --parts: unknown part {bad[0]!r} (known: {', '.join(PARTS)})\n")
    if args.max_call_tflop <= 0 or args.gemm_tokens <= 0:
        ap.exit(2, "gpu_model_probe: --max-call-tflop and --gemm-tokens must be positive\n")
    if not args.plan and not args.out:
        ap.exit(2, "gpu_model_probe: give --out DIR to measure, or --plan to size the run\n")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    points = plan(args)
    text, _ = summarize_plan(points)
    print(text, flush=True)
    if args.plan:
        return 0
    return measure(args, points)


if __name__ == "__main__":
    sys.exit(main())
