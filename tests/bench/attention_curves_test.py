#!/usr/bin/env python3
"""bench/attention_curves.py: the curves come back from kernel times made with known values.

The synthetic measurement is the topology model run forwards (topologies/README.md): a full
forward block at head dim 128 runs at efficiency x peak; a backward at 0.8 of the forward's rate;
head dim 64 at (1 + k / 512) / (1 + k / 256) of the rate at 128 with k = 128, i.e. 1.25 / 1.5;
a causal n x n block costs n (n + 1) / 2 + c (n - 1) pairs against n^2 with c = 64. The script
must invert that to efficiency [[1024, 0.4], [4096, 0.6]], backward_rate_ratio 0.8,
pair_overhead_flops 128 and cut_row_extra_pairs 64.
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "attention_curves.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import attention_curves  # noqa: E402

PEAK = 1000.0
K = 128.0
C = 64.0


def synthetic_rows(backend="cudnn"):
    rows = []
    for n, eff in ((1024, 0.4), (4096, 0.6)):
        full128 = eff * PEAK
        full64 = full128 * (1 + K / 512) / (1 + K / 256)
        causal_time_over_full = (n * (n + 1) / 2 + C * (n - 1)) / (n * n)
        causal128 = 0.5 * full128 / causal_time_over_full  # useful FLOPs are half the full block's
        for d, mask, pss, tflops in ((128, "full", "fwd", full128), (128, "full", "bwd", 0.8 * full128),
                                     (64, "full", "fwd", full64), (128, "causal", "fwd", causal128)):
            rows.append(dict(backend=backend, n=n, d=d, mask=mask, heads=8, ms=1.0, tflops=tflops,
                             **{"pass": pss}))
    rows.append(dict(backend=backend, n=2048, d=128, mask="full", heads=8, error="unsupported",
                     **{"pass": "fwd"}))  # a refused shape is skipped
    return rows


class AttentionCurves(unittest.TestCase):
    def test_the_model_values_come_back(self):
        t = attention_curves.library_table(synthetic_rows(), "cudnn", PEAK, 128)
        self.assertEqual(t["efficiency"], [[1024, 0.4], [4096, 0.6]])
        self.assertAlmostEqual(t["backward_rate_ratio"], 0.8)
        self.assertEqual(t["pair_overhead_flops"], 128)
        self.assertEqual(t["cut_row_extra_pairs"], 64)

    def test_the_inversions_by_hand(self):
        # r = 1.2 at d = 128 over 64: k = 4 x 128 x 64 x 0.2 / (128 - 1.2 x 64) = 6553.6 / 51.2 = 128.
        self.assertAlmostEqual(attention_curves.pair_overhead(1.2, 1.0, 128, 64), 128.0)
        # A rate that does not grow with the head dim has no term.
        self.assertEqual(attention_curves.pair_overhead(1.0, 1.0, 128, 64), 0.0)
        # n = 2: 3 visible pairs of 4 and one cut row; t_c / t_f = 1 gives c = (4 - 3) / 1 = 1.
        self.assertAlmostEqual(attention_curves.cut_row_pairs(1.0, 2), 1.0)
        self.assertEqual(attention_curves.cut_row_pairs(0.1, 1024), 0.0)  # faster than the pairs

    def test_the_command_prints_a_table_per_library_with_its_source(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sdpa.json")
            with open(path, "w") as f:
                json.dump({"device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cudnn": 91900,
                           "rows": synthetic_rows("flash") + synthetic_rows("cudnn")}, f)
            r = subprocess.run([sys.executable, SCRIPT, path, "--peak-tflops", "1000", "--date", "2026-11-27"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("[gpu.attention_kernels.fa2]", r.stdout)  # torch's flash backend
            self.assertIn("[gpu.attention_kernels.cudnn]", r.stdout)
            self.assertIn("efficiency = [[1024, 0.4], [4096, 0.6]]", r.stdout)
            self.assertIn("cut_row_extra_pairs = 64", r.stdout)
            self.assertIn('source = "measured 2026-11-27 on NVIDIA H100 80GB HBM3, torch 2.11.0, cuDNN 91900', r.stdout)
            # A missing file: exit 2, one line naming it.
            r = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "none.json"), "--peak-tflops", "989"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn("none.json: cannot read", r.stderr)


if __name__ == "__main__":
    unittest.main()
