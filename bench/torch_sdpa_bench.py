#!/usr/bin/env python3
"""Speed anchor for the CUDA block kernels: torch SDPA (flash and cuDNN backends) on the shapes of
bench/cuda_kernel_bench.cc, timed the same way (CUDA events around one call, median of repeats).

Shapes and FLOPs follow cuda_kernel_bench exactly, so the two tables line up row by row:
  square blocks n_q = n_k = n, head dim d, bf16, batch 1, GQA with 8 query heads per KV head,
  heads = the smallest multiple of 8 with 4 n^2 d heads >= 1e12 (one launch does >= 1 TFLOP);
  forward FLOPs 4 n^2 d heads, backward 2.5x forward, causal half of that.
The backward is timed alone: the forward runs once outside the timed region, then
torch.autograd.grad of the output against dO is timed.

Runs on a machine with a CUDA GPU and PyTorch (the device machine); writes JSON with --json.
  python3 bench/torch_sdpa_bench.py [--sizes 4096,8192] [--dims 64,128] [--json out.json]
"""
import argparse
import json
import math
import statistics
import sys

GROUP = 8
MIN_LAUNCH_FLOPS = 1e12


def heads_for(n, d):
    per_head = 4.0 * n * n * d
    heads = math.ceil(MIN_LAUNCH_FLOPS / per_head)
    heads = (heads + GROUP - 1) // GROUP * GROUP
    return max(heads, GROUP)


def useful_flops(n, d, heads, causal, backward):
    f = 4.0 * n * n * d * heads
    if backward:
        f *= 2.5
    if causal:
        f *= 0.5
    return f


def time_ms(torch, fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192,16384,32768")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--backends", default="flash,cudnn")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        print("torch_sdpa_bench: no CUDA device; nothing measured")
        return 0
    names = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
             "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows = []
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"cudnn {torch.backends.cudnn.version()}")
    print(f"{'backend':8s} {'n':>6s} {'d':>4s} {'mask':7s} {'pass':4s} {'heads':>6s} {'ms':>9s} {'TFLOP/s':>8s}")
    for n in [int(s) for s in args.sizes.split(",")]:
        for d in [int(s) for s in args.dims.split(",")]:
            heads = heads_for(n, d)
            kv = heads // GROUP
            gen = torch.Generator(device="cuda").manual_seed(n * 1000 + d)
            # [B, H, S, d] views of [B, S, H, d] storage, as meshplan lays tensors out.
            q = torch.randn(1, n, heads, d, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            k = torch.randn(1, n, kv, d, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            v = torch.randn(1, n, kv, d, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            do = torch.randn(1, n, heads, d, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
            for backend in args.backends.split(","):
                for causal in (False, True):
                    for backward in (False, True):
                        mask = "causal" if causal else "full"
                        rec = {"backend": backend, "n": n, "d": d, "mask": mask,
                               "pass": "bwd" if backward else "fwd", "heads": heads}
                        try:
                            with sdpa_kernel([names[backend]]):
                                # GQA as K/V heads repeated: every backend takes it, and the
                                # repeat is outside the timed region.
                                kr = k.repeat_interleave(GROUP, dim=1).detach().requires_grad_(backward)
                                vr = v.repeat_interleave(GROUP, dim=1).detach().requires_grad_(backward)
                                qq = q.detach().requires_grad_(backward)
                                if not backward:
                                    def fn():
                                        F.scaled_dot_product_attention(qq, kr, vr, is_causal=causal)
                                else:
                                    out = F.scaled_dot_product_attention(qq, kr, vr, is_causal=causal)

                                    def fn():
                                        torch.autograd.grad(out, (qq, kr, vr), do, retain_graph=True)
                                med, best = time_ms(torch, fn, args.warmup, args.repeat)
                            flops = useful_flops(n, d, heads, causal, backward)
                            rec.update(ms=med, min_ms=best, tflops=flops / (med * 1e-3) / 1e12)
                            print(f"{backend:8s} {n:6d} {d:4d} {mask:7s} {rec['pass']:4s} {heads:6d} "
                                  f"{med:9.3f} {rec['tflops']:8.1f}")
                        except Exception as e:  # a backend that refuses a shape: say so, go on
                            rec["error"] = str(e).splitlines()[0][:160]
                            print(f"{backend:8s} {n:6d} {d:4d} {mask:7s} {rec['pass']:4s} unsupported: {rec['error']}")
                        rows.append(rec)
                        torch.cuda.empty_cache()
            del q, k, v, do
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cudnn": torch.backends.cudnn.version(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
