#!/usr/bin/env python3
"""Where zigzag and striped Ring differ: ring-flash-attention's forward, step by step, on one GPU.

Measured (bench/published/heldout.csv, ring-flash-attention's README: 8 GPUs, 8K tokens each,
32/8 heads, d = 128, bf16, FlashAttention-2), zigzag Ring's forward takes 15.9 ms on H800 and
26.2 on A100, striped Ring's 18.2 and 30.8: 15-18% more. meshplan calls the two a tie
(docs/fidelity.md, "Zigzag vs striped Ring"), and the kernel benchmark it fits on says their
kernels cost the same. This program takes the forward apart on one GPU to say where the
difference lies: the attention call and the merge of each (rank, step) are timed alone, as
ring-flash-attention runs them (zhuzilin/ring-flash-attention at commit 8996282:
ring_flash_attn/zigzag_ring_flash_attn.py, stripe_flash_attn.py and ring_flash_attn.py, forward;
utils.py update_out_and_lse):

  zigzag      rank r holds chunks r and 2P-1-r of 2P. Step 0: its own K,V, causal. A step s <= r:
              all its query rows against the first half of the K,V it holds, full; the merge
              covers every row. A step s > r: the second half of its query rows against all the
              K,V, full; the merge goes through a slice of the output (rows n/2..n).
  striped     rank r holds tokens r, r + P, r + 2P, ... A step s <= r: all rows, causal; the merge
              covers every row. A step s > r: rows 1.. against keys ..n-2, causal (a key of a
              later rank is always one stripe behind); the merge goes through the slice 1..n.
  contiguous  rank r holds tokens [r n, (r+1) n). Step 0 causal, steps s <= r full with a merge of
              every row, steps s > r nothing.

At step s rank r holds the K,V of rank (r - s) mod P (the ring passes them to rank r + 1). A
step of the ring takes about the longest (call + merge) of its ranks (each waits for its
neighbour's K,V, sent as that neighbour's step begins), so a layout's forward is about the sum
over steps of that maximum; the K,V transfer overlaps and is left out. The merge is utils.py's
(fp32 output, the LSE as [B, S, H, 1], under torch.jit.script as there), the slice copies
included. The attention call is torch's flash kernel (FlashAttention-2, as the source ran) through
torch.ops.aten._scaled_dot_product_flash_attention, which also returns the LSE; the K,V heads are
repeated to the query heads outside the timed region (the aten op takes no GQA).

  python3 bench/ring_layout_steps.py [--gpus 8] [--tokens-per-gpu 8192] [--heads 32] [--kv-heads 8]
      [--head-dim 128] [--layouts zigzag,striped,contiguous] [--json out.json]

Without a CUDA device (or PyTorch) it prints one line and exits 0; `--plan-only` prints the
steps (rows, keys, causal, merge) without timing anything. The step lists are checked without a
GPU: tests/bench/ring_layout_steps_test.py covers every visible pair exactly once.
"""
import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass

LAYOUTS = ("zigzag", "striped", "contiguous")
# Forward times measured by ring-flash-attention's README (ms), for the summary line.
MEASURED_FWD_MS = {
    "H800": {"contiguous": 1e3 / 38.5, "zigzag": 1e3 / 63.0, "striped": 1e3 / 55.0},
    "A100": {"contiguous": 1e3 / 24.0, "zigzag": 1e3 / 38.2, "striped": 1e3 / 32.5},
}


@dataclass(frozen=True)
class Step:
    """One rank's attention call at one ring step: query rows [q0, q1) and key rows [k0, k1) of
    the rank's own shard and of the K,V it holds, causal (top-left aligned, equal lengths) or
    full; the merge: "first" (the output starts from it), "all" (every row) or "slice" (rows
    [q0, q1) through a slice of the output)."""
    step: int
    kv_rank: int
    q0: int
    q1: int
    k0: int
    k1: int
    causal: bool
    merge: str


def ring_steps(layout, rank, gpus, n):
    """The attention calls of `rank` over the ring's `gpus` steps, n tokens per rank."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}")
    if layout in ("zigzag", "striped") and n % 2:
        raise ValueError("zigzag and striped need an even number of tokens per rank")
    steps = []
    half = n // 2
    for s in range(gpus):
        kv = (rank - s) % gpus
        merge = "first" if s == 0 else "all"
        if layout == "zigzag":
            if s == 0:
                steps.append(Step(s, kv, 0, n, 0, n, True, merge))
            elif s <= rank:
                steps.append(Step(s, kv, 0, n, 0, half, False, merge))
            else:
                steps.append(Step(s, kv, half, n, 0, n, False, "slice"))
        elif layout == "striped":
            if s <= rank:
                steps.append(Step(s, kv, 0, n, 0, n, True, merge))
            else:
                steps.append(Step(s, kv, 1, n, 0, n - 1, True, "slice"))
        else:
            if s <= rank:
                steps.append(Step(s, kv, 0, n, 0, n, s == 0, merge))
    return steps


def positions(layout, rank, gpus, n):
    """Global token position of each of rank's n rows."""
    if layout == "zigzag":
        half = n // 2
        return [rank * half + i for i in range(half)] + \
               [(2 * gpus - 1 - rank) * half + i for i in range(half)]
    if layout == "striped":
        return [rank + gpus * m for m in range(n)]
    return [rank * n + i for i in range(n)]


def call_pairs(step):
    """(query row, key row) pairs the call computes: its rectangle, the upper triangle dropped
    when causal (row i of the call sees call keys 0..i)."""
    pairs = []
    for i in range(step.q1 - step.q0):
        last = i if step.causal else step.k1 - step.k0 - 1
        for j in range(min(last, step.k1 - step.k0 - 1) + 1):
            pairs.append((step.q0 + i, step.k0 + j))
    return pairs


def time_layouts(args):
    try:
        import torch
    except ImportError:
        print("ring_layout_steps: no PyTorch; nothing measured")
        return None
    if not torch.cuda.is_available():
        print("ring_layout_steps: no CUDA device; nothing measured")
        return None
    import torch.nn.functional as F

    def update_eager(out: torch.Tensor, lse: torch.Tensor, block_out: torch.Tensor,
                     block_lse: torch.Tensor):
        # utils.py _update_out_and_lse at 8996282.
        block_out = block_out.to(torch.float32)
        block_lse = block_lse.transpose(-2, -1).unsqueeze(dim=-1)
        out = out - F.sigmoid(block_lse - lse) * (out - block_out)
        lse = lse - F.logsigmoid(lse - block_lse)
        return out, lse

    # Scripted as the source runs it; eager where this torch no longer scripts it (TorchScript is
    # deprecated), which the report records.
    try:
        update = torch.jit.script(update_eager)
        merge_mode = "torch.jit.script"
    except Exception as err:  # noqa: BLE001 (any scripting failure falls back)
        update = update_eager
        merge_mode = f"eager ({type(err).__name__})"

    n, hq, hkv, d = args.tokens_per_gpu, args.heads, args.kv_heads, args.head_dim
    dev, dt = "cuda", torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(1)
    q = torch.randn(1, n, hq, d, device=dev, dtype=dt, generator=gen)
    kv = torch.randn(1, n, 2, hkv, d, device=dev, dtype=dt, generator=gen)  # kvpacked, as the source
    k = kv[:, :, 0].repeat_interleave(hq // hkv, dim=2)
    v = kv[:, :, 1].repeat_interleave(hq // hkv, dim=2)

    def flash(step):
        qs = q[:, step.q0:step.q1].transpose(1, 2)
        ks = k[:, step.k0:step.k1].transpose(1, 2)
        vs = v[:, step.k0:step.k1].transpose(1, 2)
        r = torch.ops.aten._scaled_dot_product_flash_attention(qs, ks, vs, 0.0, step.causal)
        return r[0].transpose(1, 2), r[1]  # [B, S, H, d] out, [B, H, S] fp32 LSE

    def events_ms(fn, warmup, repeat):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)

    call_ms, merge_ms = {}, {}
    base_out = torch.randn(1, n, hq, d, device=dev, dtype=torch.float32, generator=gen)
    base_lse = torch.randn(1, n, hq, 1, device=dev, dtype=torch.float32, generator=gen)

    def merge_time(st, block_out, block_lse):
        if st.merge == "first":
            return events_ms(lambda: (block_out.to(torch.float32),
                                      block_lse.transpose(-2, -1).unsqueeze(dim=-1)),
                             args.warmup, args.repeat)
        if st.merge == "all":
            return events_ms(lambda: update(base_out, base_lse, block_out, block_lse),
                             args.warmup, args.repeat)

        # Through a slice, written back in place (utils.py update_out_and_lse with slice_): on
        # clones of the output, whose copying is timed alone and taken off.
        def clones():
            return base_out.clone(), base_lse.clone()

        def sliced():
            out, lse = clones()
            so, sl = update(out[:, st.q0:st.q1], lse[:, st.q0:st.q1], block_out, block_lse)
            out[:, st.q0:st.q1], lse[:, st.q0:st.q1] = so, sl

        return (events_ms(sliced, args.warmup, args.repeat) -
                events_ms(clones, args.warmup, args.repeat))
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "tokens_per_gpu": n, "heads": hq, "kv_heads": hkv, "head_dim": d,
              "gpus": args.gpus, "merge": merge_mode, "layouts": {}}
    print(f"device: {report['device']}  torch {torch.__version__}; {args.gpus} ranks of {n} "
          f"tokens, {hq}/{hkv} heads, d {d}, bf16, merge {merge_mode}; ms per step: the slowest rank's "
          "call + merge")
    for layout in args.layouts.split(","):
        per_step = []
        for s in range(args.gpus):
            worst = None
            for r in range(args.gpus):
                st = [x for x in ring_steps(layout, r, args.gpus, n) if x.step == s]
                if not st:
                    continue
                st = st[0]
                key = (st.q1 - st.q0, st.k1 - st.k0, st.causal)
                if key not in call_ms:
                    call_ms[key] = events_ms(lambda: flash(st), args.warmup, args.repeat)
                block_out, block_lse = flash(st)
                mkey = (st.merge, st.q0, st.q1)
                if mkey not in merge_ms:
                    merge_ms[mkey] = merge_time(st, block_out, block_lse)
                total = call_ms[key] + merge_ms[mkey]
                if worst is None or total > worst[0]:
                    worst = (total, r, call_ms[key], merge_ms[mkey], asdict(st))
            per_step.append(worst)
        total = sum(w[0] for w in per_step)
        calls = sum(w[2] for w in per_step)
        merges = sum(w[3] for w in per_step)
        report["layouts"][layout] = {"ms": total, "call_ms": calls, "merge_ms": merges,
                                     "steps": [{"ms": w[0], "rank": w[1], "call_ms": w[2],
                                                "merge_ms": w[3], "step": w[4]} for w in per_step]}
        print(f"{layout:10s} {total:8.3f} ms  (calls {calls:8.3f}, merges {merges:7.3f})  "
              + " ".join(f"{w[0]:.2f}" for w in per_step))
    lay = report["layouts"]
    if "zigzag" in lay and "striped" in lay:
        ratio = lay["striped"]["ms"] / lay["zigzag"]["ms"]
        measured = ", ".join(f"{g} {m['striped'] / m['zigzag']:.3f}" for g, m in MEASURED_FWD_MS.items())
        print(f"striped / zigzag: {ratio:.3f} here (calls {lay['striped']['call_ms'] / lay['zigzag']['call_ms']:.3f}, "
              f"merges {lay['striped']['merge_ms'] / max(lay['zigzag']['merge_ms'], 1e-9):.3f}); "
              f"ring-flash-attention measured {measured}")
        report["striped_over_zigzag"] = ratio
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--tokens-per-gpu", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--plan-only", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    bad = [x for x in args.layouts.split(",") if x not in LAYOUTS]
    if bad or args.gpus < 1 or args.tokens_per_gpu < 2 or args.tokens_per_gpu % 2 or \
            args.heads % max(args.kv_heads, 1) or args.kv_heads < 1:
        print(f"ring_layout_steps: bad arguments (layouts {bad or 'ok'}; --gpus >= 1, an even "
              "--tokens-per-gpu, --heads a multiple of --kv-heads)", file=sys.stderr)
        return 2
    if args.plan_only:
        for layout in args.layouts.split(","):
            for r in range(args.gpus):
                for st in ring_steps(layout, r, args.gpus, args.tokens_per_gpu):
                    print(f"{layout} rank {r} step {st.step} kv of rank {st.kv_rank}: rows "
                          f"[{st.q0}, {st.q1}) keys [{st.k0}, {st.k1}) "
                          f"{'causal' if st.causal else 'full'}, merge {st.merge}")
        return 0
    report = time_layouts(args)
    if report is not None and args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
