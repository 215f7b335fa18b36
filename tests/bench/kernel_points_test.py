#!/usr/bin/env python3
"""bench/kernel_points.py: the stored FA2-K rows have the shapes FlashAttention-2's benchmark ran,
each kernel point maps to the cluster whose GPU ran it, the FLOP count is FlashAttention's, and
bad input exits 2 with one line."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import kernel_points  # noqa: E402
import published  # noqa: E402

SCRIPT = os.path.join(ROOT, "bench", "kernel_points.py")
FA2K = os.path.join(ROOT, "bench", "published", "kernels_fa2.csv")


class Fa2kRows(unittest.TestCase):
    def test_rows_have_the_benchmarks_shapes(self):
        # benchmark_flash_attention.py (60499abc, lines 74-77): batch x seqlen = 16K tokens,
        # dim 2048 = heads x head dim, head dims 64 and 128, forward+backward.
        rows = published.load_points(FA2K)
        self.assertEqual(len(rows), 45)  # 4 panels x 6 lengths x 2 GPUs, less 3 hidden labels
        for p in rows:
            self.assertTrue(published.is_kernel_point(p), p["id"])
            self.assertEqual(p["batch"] * p["seq_tokens"], 16384, p["id"])
            self.assertEqual(p["q_heads"] * p["head_dim"], 2048, p["id"])
            self.assertEqual(p["q_heads"], p["kv_heads"], p["id"])
            self.assertEqual(p["pass"], "fwd+bwd", p["id"])
            self.assertEqual(p["unit"], "tflops_per_gpu_fa_convention", p["id"])

    def test_flops_and_seconds_follow_flashattentions_count(self):
        # A100 causal d 128 at 8K: batch 2, 16 heads. Forward 4 x 2 x 8192^2 x 16 x 128 / 2 =
        # 5.4976e11; forward+backward 3.5x = 1.92415e12; at 182 TFLOP/s, 10.572 ms.
        p = next(r for r in published.load_points(FA2K) if r["id"] == "FA2-K.A100.causal.d128.8192")
        self.assertAlmostEqual(published.fa_flops_per_gpu(p) / 1.92415e12, 1.0, places=4)
        self.assertAlmostEqual(published.measured_seconds(p) * 1e3, 10.572, places=2)


class Clusters(unittest.TestCase):
    def test_a_cluster_column_wins_and_magi_k_runs_on_magis_h100s(self):
        self.assertEqual(kernel_points.point_cluster({"id": "x", "source": "RFA-K",
                                                      "cluster": "dgx-h800-1node"}),
                         "dgx-h800-1node")
        self.assertEqual(kernel_points.point_cluster({"id": "x", "source": "MAGI-K"}),
                         "dgx-h100-1node")

    def test_an_unknown_source_without_a_cluster_is_an_error(self):
        with self.assertRaises(published.SuiteError):
            kernel_points.point_cluster({"id": "x", "source": "NEW-K", "cluster": ""})


class BadInput(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_a_file_without_kernel_points_exits_2_in_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.csv")
            with open(FA2K, newline="", encoding="utf-8") as f:
                header = next(csv.reader(f))
            with open(path, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(header)
                row = dict.fromkeys(header, "")
                row.update({"id": "cp", "source": "S", "gpus": "8", "seq_tokens": "8192",
                            "batch": "1", "q_heads": "8", "kv_heads": "8", "head_dim": "128",
                            "mask": "causal", "pass": "fwd", "library": "fa2",
                            "meshplan_scheme": "ring", "meshplan_selection": "{}",
                            "measured": "1", "unit": "iterations_per_s"})
                w.writerow([row[c] for c in header])
            r = self.run_script("--meshplan", sys.executable, "--points", path)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no kernel points in", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_a_missing_file_or_binary_exits_2(self):
        r = self.run_script("--meshplan", sys.executable, "--points", "/nonexistent/p.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/p.csv", r.stderr)
        r = self.run_script("--meshplan", "/nonexistent/meshplan")
        self.assertEqual(r.returncode, 2)
        self.assertIn("meshplan binary not found", r.stderr)


if __name__ == "__main__":
    unittest.main()
