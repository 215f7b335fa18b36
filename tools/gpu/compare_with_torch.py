#!/usr/bin/env python3
"""Checks `meshplan execute --backend cuda` against PyTorch on the same GPU and inputs.

For each mask: draws random inputs (bf16 values, stored as float32 .npy), computes the reference
O, LSE, dQ, dK, dV in float32 with torch (memory-efficient SDPA kernel, TF32 off), then for each
scheme plans a workload on an 8-GPU node, runs `meshplan execute --backend cuda --inputs ...
--outputs ...` (8 virtual ranks on this GPU) and reports, per tensor, the max relative error
max|x - ref| / max|ref| (the project's metric, executor/output_check.h) and the measured time.
It also times torch's own bf16 SDPA (flash backend) fwd+bwd on the whole sequence, the speed
anchor for one whole-attention call.

  python3 tools/gpu/compare_with_torch.py --meshplan BIN --topology T --out DIR \
      [--seq 65536] [--heads 32] [--kv-heads 8] [--dim 128] [--masks causal,full] [--schemes ...]
      [--repeat N]
Prints one table; writes DIR/compare.json (--name NAME: DIR/NAME.json).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

TENSORS = ("o", "lse", "dq", "dk", "dv")


def make_inputs(torch, seq, hq, hkv, d, seed, dir_):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shapes = {"q": (1, seq, hq, d), "k": (1, seq, hkv, d), "v": (1, seq, hkv, d), "d_o": (1, seq, hq, d)}
    tensors = {}
    os.makedirs(dir_, exist_ok=True)
    for name, shape in shapes.items():
        t = torch.randn(shape, device="cuda", generator=g, dtype=torch.float32).to(torch.bfloat16).float()
        tensors[name] = t
        np.save(os.path.join(dir_, name + ".npy"), t.cpu().numpy())
    return tensors


def random_inputs(torch, seq, hq, hkv, d):
    """bf16-valued float32 tensors of the given shapes on the GPU, for timing only (no files)."""
    shapes = {"q": (1, seq, hq, d), "k": (1, seq, hkv, d), "v": (1, seq, hkv, d), "d_o": (1, seq, hq, d)}
    return {n: torch.randn(s, device="cuda").to(torch.bfloat16).float() for n, s in shapes.items()}


def window_of(mask):
    """W of a `window:W` mask (K and M binary, as meshplan reads them), else None."""
    if not mask.startswith("window:"):
        return None
    text = mask.split(":", 1)[1]
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def visible_pairs(seq, mask):
    """(query, key) pairs the mask shows: S^2 full, S (S + 1) / 2 causal, and for window:W (key k
    visible to query q iff q - W < k <= q) min(q + 1, W) summed over q."""
    window = window_of(mask)
    if window is not None:
        w = min(window, seq)
        return w * (w + 1) // 2 + (seq - w) * w
    return seq * (seq + 1) // 2 if mask == "causal" else seq * seq


def band_mask(torch, seq, window):
    """[S, S] bool, True where key j is visible to query i: i - W < j <= i."""
    i = torch.arange(seq, device="cuda").unsqueeze(1)
    j = torch.arange(seq, device="cuda").unsqueeze(0)
    return (j <= i) & (j > i - window)


def reference(torch, t, causal, group, window=None):
    """float32 O, LSE ([B,S,Hq]), dQ, dK, dV in meshplan's [B,S,H,d] layout (a `window` as an
    additive -inf bias outside the band)."""
    F = torch.nn.functional
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    q = t["q"].transpose(1, 2).contiguous().requires_grad_(True)           # [B,Hq,S,d]
    k = t["k"].transpose(1, 2).repeat_interleave(group, dim=1).contiguous().requires_grad_(True)
    v = t["v"].transpose(1, 2).repeat_interleave(group, dim=1).contiguous().requires_grad_(True)
    bias = None
    if window is not None:
        seq = q.shape[2]
        bias = torch.zeros(seq, seq, device="cuda", dtype=torch.float32)
        bias.masked_fill_(~band_mask(torch, seq, window), float("-inf"))
        bias = bias.expand(q.shape[0], q.shape[1], seq, seq)
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(
        q, k, v, bias, True, 0.0, causal)[:2]
    seq = q.shape[2]
    lse = lse[:, :, :seq]
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), t["d_o"].transpose(1, 2))
    b, hq, s, d = dk.shape
    dk = dk.view(b, hq // group, group, s, d).sum(2)
    dv = dv.view(b, hq // group, group, s, d).sum(2)
    return {"o": out.detach().transpose(1, 2), "lse": lse.detach().transpose(1, 2),
            "dq": dq.transpose(1, 2), "dk": dk.transpose(1, 2), "dv": dv.transpose(1, 2)}


def torch_whole_ms(torch, t, causal, group, backend="flash", repeat=5, window=None):
    """Median ms of torch bf16 SDPA (flash, efficient or cudnn backend) fwd+bwd over the whole
    sequence; a `window` as a boolean attn_mask (which torch's flash backend does not take)."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = t["q"].to(torch.bfloat16).transpose(1, 2).detach().requires_grad_(True)
    k = t["k"].to(torch.bfloat16).transpose(1, 2).repeat_interleave(group, dim=1).detach().requires_grad_(True)
    v = t["v"].to(torch.bfloat16).transpose(1, 2).repeat_interleave(group, dim=1).detach().requires_grad_(True)
    do = t["d_o"].to(torch.bfloat16).transpose(1, 2)
    times = []
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
              "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    attn_mask = None if window is None else band_mask(torch, q.shape[2], window)
    with sdpa_kernel([chosen]):
        for i in range(repeat + 2):
            torch.cuda.synchronize()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            if attn_mask is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            torch.autograd.grad(out, (q, k, v), do)
            e.record()
            e.synchronize()
            if i >= 2:
                times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def rel_err(torch, x, ref):
    x = torch.as_tensor(x, device="cuda", dtype=torch.float32)
    if x.shape != ref.shape:
        return float("nan")
    finite = torch.isfinite(ref)
    if not torch.equal(finite, torch.isfinite(x)):
        return float("inf")
    diff = (x - ref)[finite].abs().max().item()
    scale = ref[finite].abs().max().item()
    return diff / scale if scale > 0 else diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshplan", required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/meshplan-compare")
    ap.add_argument("--seq", type=int, default=65536)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--masks", default="causal,full")
    ap.add_argument("--schemes", default="",
                    help="comma-separated schemes (default: every scheme of `meshplan plan --list-schemes`)")
    ap.add_argument("--kernels", default="auto")
    ap.add_argument("--name", default="compare", help="results file: OUT/NAME.json")
    ap.add_argument("--repeat", type=int, default=1,
                    help="execute --repeat N: a warm-up run (cuDNN graph builds) then N timed runs; "
                         "the measured time is their median")
    ap.add_argument("--no-reference", action="store_true",
                    help="timing only: no float32 reference and no error columns; execute draws its own "
                         "seeded inputs (per rank, on the GPU's host) and torch times random ones of the same "
                         "shapes, so sizes whose float32 reference would take minutes stay cheap")
    args = ap.parse_args()
    if not args.schemes:  # the binary's registry is the one list of schemes
        listing = subprocess.run([args.meshplan, "plan", "--list-schemes"], check=True, capture_output=True, text=True)
        args.schemes = ",".join(line.split()[0] for line in listing.stdout.splitlines() if line.strip())
    import torch

    os.makedirs(args.out, exist_ok=True)
    group = args.heads // args.kv_heads
    results = []
    for mask in args.masks.split(","):
        causal = mask == "causal"
        window = window_of(mask)
        inputs_dir = os.path.join(args.work, "inputs-" + mask.replace(":", "-"))
        t0 = time.time()
        if args.no_reference:
            t = random_inputs(torch, args.seq, args.heads, args.kv_heads, args.dim)
            ref = None
        else:
            t = make_inputs(torch, args.seq, args.heads, args.kv_heads, args.dim, 7 if causal else 8, inputs_dir)
            ref = reference(torch, t, causal, group, window)
        # A window is an attn_mask, which torch's flash backend does not take: its efficient one
        # stands in (the "torch flash" column then times that backend).
        torch_ms = torch_whole_ms(torch, t, causal, group, "flash" if window is None else "efficient",
                                  window=window)
        try:
            torch_cudnn_ms = torch_whole_ms(torch, t, causal, group, "cudnn", window=window)
        except Exception as e:  # a torch without the cuDNN SDPA backend for this shape
            print(f"[{mask}] torch cudnn SDPA unavailable: {str(e).splitlines()[0][:120]}")
            torch_cudnn_ms = float("nan")
        # Useful FLOPs of fwd+bwd (LongCA / FlashAttention convention): 3.5 x 4 pairs Hq d, the
        # pairs the mask shows (S^2 full, about half that causal, about S W for a window).
        flops = 3.5 * 4.0 * visible_pairs(args.seq, mask) * args.heads * args.dim
        if causal:  # the FlashAttention convention halves S^2 (not S (S + 1) / 2)
            flops = 3.5 * 4.0 * args.seq * args.seq * args.heads * args.dim * 0.5
        print(f"[{mask}] inputs{'' if ref is None else ' + float32 reference'} in {time.time() - t0:.1f} s; whole-sequence bf16 "
              f"fwd+bwd: torch flash {torch_ms:.2f} ms ({flops / torch_ms / 1e9:.0f} TFLOP/s), torch cudnn "
              f"{torch_cudnn_ms:.2f} ms ({flops / torch_cudnn_ms / 1e9:.0f} TFLOP/s)", flush=True)
        for scheme in args.schemes.split(","):
            rec = {"mask": mask, "scheme": scheme, "torch_flash_ms": torch_ms, "torch_cudnn_ms": torch_cudnn_ms,
                   "flops": flops}
            tag = mask.replace(":", "-")
            plan = os.path.join(args.work, f"plan-{scheme}-{tag}.toml")
            outputs = os.path.join(args.work, f"out-{scheme}-{tag}")
            cmd = [args.meshplan, "plan", "-t", args.topology, "--seq", str(args.seq), "--heads",
                   str(args.heads), "--kv-heads", str(args.kv_heads), "--head-dim", str(args.dim),
                   "--mask", mask, "--pass", "fwd+bwd", "--schemes", scheme, "--pick", "1",
                   "--out", plan, "--quiet", "--top", "1"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                rec["error"] = "plan: " + (p.stderr.strip().splitlines() or ["?"])[-1]
                results.append(rec)
                print(f"{scheme:13s} {mask:6s} {rec['error']}", flush=True)
                continue
            files = [] if ref is None else ["--inputs", inputs_dir, "--outputs", outputs]
            cmd = [args.meshplan, "execute", plan, "--backend", "cuda", "--kernels", args.kernels,
                   *files, "--format", "json", "--timeout-s", "300",
                   "--repeat", str(args.repeat), "--quiet"]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            rec["wall_s"] = time.time() - t0
            if p.returncode != 0:
                rec["error"] = "execute: " + (p.stderr.strip().splitlines() or ["?"])[-1]
                results.append(rec)
                print(f"{scheme:13s} {mask:6s} {rec['error']}", flush=True)
                continue
            try:
                j = json.loads(p.stdout)
                rec["measured_ms"] = j["repeat"]["median_s"] * 1e3
                rec["spread"] = j["repeat"]["spread"]
                rec["peak_device_bytes"] = max(j["memory"]["rank_peak_bytes"] or [0])
                rec["run"] = j.get("run", "")
            except Exception:
                rec["measured_ms"] = float("nan")
            for name in TENSORS if ref is not None else ():
                rec[name] = rel_err(torch, np.load(os.path.join(outputs, name + ".npy")), ref[name])
            results.append(rec)
            errs = " ".join(f"{n}={rec[n]:.2e}" for n in TENSORS) if ref is not None else "(timing only)"
            print(f"{scheme:13s} {mask:6s} {errs} measured {rec['measured_ms']:.1f} ms = "
                  f"{flops / rec['measured_ms'] / 1e9:.0f} TFLOP/s on the GPU, {rec['measured_ms'] / torch_cudnn_ms:.2f}x "
                  f"torch cudnn whole; wall {rec['wall_s']:.0f} s; {rec.get('run', '')}", flush=True)
        del t, ref
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, args.name + ".json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "seq": args.seq, "heads": args.heads,
                   "kv_heads": args.kv_heads, "dim": args.dim, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
