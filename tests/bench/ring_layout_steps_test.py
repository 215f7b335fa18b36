#!/usr/bin/env python3
"""bench/ring_layout_steps.py: the steps it times are ring-flash-attention's forward, exactly.

The check is independent of the step rules: each layout's rows are mapped to global token
positions by the layout's definition (zigzag: chunks r and 2P-1-r of 2P; striped: r + P m;
contiguous: [r n, (r+1) n)), the K,V a rank holds at step s are rank (r - s) mod P's, and the
pairs every call computes (its rectangle, the upper triangle dropped when causal) must be the
causal mask's visible pairs (key position <= query position), each exactly once over the ring.
"""
import io
import os
import subprocess
import sys
import unittest
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ring_layout_steps.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ring_layout_steps as rls  # noqa: E402


def position_of(layout, rank, gpus, n, row):
    half = n // 2
    if layout == "zigzag":
        chunk = rank if row < half else 2 * gpus - 1 - rank
        return chunk * half + row % half
    if layout == "striped":
        return rank + gpus * row
    return rank * n + row


class EveryVisiblePairOnce(unittest.TestCase):
    def test_layouts_cover_the_causal_mask_exactly(self):
        for layout in rls.LAYOUTS:
            for gpus in (1, 2, 3, 4, 8):
                for n in (2, 4, 6, 8):
                    with self.subTest(layout=layout, gpus=gpus, n=n):
                        seen = []
                        for r in range(gpus):
                            for st in rls.ring_steps(layout, r, gpus, n):
                                self.assertEqual(st.kv_rank, (r - st.step) % gpus)
                                for qi, kj in rls.call_pairs(st):
                                    seen.append((position_of(layout, r, gpus, n, qi),
                                                 position_of(layout, st.kv_rank, gpus, n, kj)))
                        s = gpus * n
                        expected = sorted((q, k) for q in range(s) for k in range(q + 1))
                        self.assertEqual(sorted(seen), expected)

    def test_positions_match_the_layouts_definition(self):
        for layout in rls.LAYOUTS:
            got = sorted(p for r in range(4) for p in rls.positions(layout, r, 4, 6))
            self.assertEqual(got, list(range(24)), layout)
            for r in range(4):
                self.assertEqual(rls.positions(layout, r, 4, 6),
                                 [position_of(layout, r, 4, 6, i) for i in range(6)])

    def test_merges_as_the_source_does_them(self):
        # Rank 2 of 4, 8 tokens: zigzag merges every row at steps 1-2 (K,V of ranks 1 and 0) and
        # rows 4-8 through a slice at step 3; striped every row at steps 1-2 and rows 1-8 through
        # a slice at step 3; contiguous every row at steps 1-2 and nothing at step 3.
        zig = rls.ring_steps("zigzag", 2, 4, 8)
        self.assertEqual([(x.q0, x.q1, x.k0, x.k1, x.causal, x.merge) for x in zig],
                         [(0, 8, 0, 8, True, "first"), (0, 8, 0, 4, False, "all"),
                          (0, 8, 0, 4, False, "all"), (4, 8, 0, 8, False, "slice")])
        stripe = rls.ring_steps("striped", 2, 4, 8)
        self.assertEqual([(x.q0, x.q1, x.k0, x.k1, x.causal, x.merge) for x in stripe],
                         [(0, 8, 0, 8, True, "first"), (0, 8, 0, 8, True, "all"),
                          (0, 8, 0, 8, True, "all"), (1, 8, 0, 7, True, "slice")])
        contiguous = rls.ring_steps("contiguous", 2, 4, 8)
        self.assertEqual([(x.step, x.causal, x.merge) for x in contiguous],
                         [(0, True, "first"), (1, False, "all"), (2, False, "all")])


class CommandLine(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_plan_only_lists_every_step(self):
        r = self.run_script("--gpus", "4", "--tokens-per-gpu", "8", "--plan-only")
        self.assertEqual(r.returncode, 0, r.stderr)
        # zigzag and striped: 4 ranks x 4 steps; contiguous: 1 + 2 + 3 + 4 steps.
        self.assertEqual(len(r.stdout.splitlines()), 16 + 16 + 10)

    def test_bad_arguments_exit_2(self):
        for args in (["--layouts", "zigzag,spiral"], ["--tokens-per-gpu", "7"],
                     ["--heads", "30", "--kv-heads", "8"]):
            r = self.run_script(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("ring_layout_steps: bad arguments", r.stderr)

    def test_without_a_device_nothing_is_measured(self):
        try:
            import torch  # noqa: F401
            has_cuda = torch.cuda.is_available()
        except ImportError:
            has_cuda = False
        if has_cuda:
            self.skipTest("a CUDA device is here: the timing runs instead")
        out = io.StringIO()
        with redirect_stdout(out):
            rc = rls.main(["--gpus", "2", "--tokens-per-gpu", "8"])
        self.assertEqual(rc, 0)
        self.assertIn("nothing measured", out.getvalue())


if __name__ == "__main__":
    unittest.main()
